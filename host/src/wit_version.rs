//! Which versions of the `toolcell:plugin` WIT package this toolcell can load.
//!
//! The package follows semantic versioning: a plugin built against an older version of
//! the same series (same major version; for 0.x, the same minor version) only uses
//! what this toolcell still provides, so it loads; wasmtime links its imports and
//! finds its exports by the same rule. A plugin of another series, or one newer than
//! this toolcell, is refused with both versions named.

use semver::Version;

use crate::artifact::WIT_PACKAGE;

/// The version of `wit/plugin.wit` this toolcell was built with.
pub const WIT_VERSION: &str = "0.1.2";

/// This toolcell's WIT version, parsed.
pub fn host_version() -> Version {
    // A unit test checks that WIT_VERSION parses and matches wit/plugin.wit.
    Version::parse(WIT_VERSION).unwrap_or_else(|_| Version::new(0, 0, 0))
}

/// Whether a plugin built against `plugin` can be loaded by a host of version `host`;
/// the error names both versions and what to do.
pub fn check_compatible(plugin: &Version, host: &Version) -> Result<(), String> {
    let same_series = if host.major > 0 {
        plugin.major == host.major
    } else if host.minor > 0 {
        plugin.major == 0 && plugin.minor == host.minor
    } else {
        plugin.major == 0 && plugin.minor == 0 && plugin.patch == host.patch
    };
    if !same_series {
        return Err(format!(
            "it was built for {WIT_PACKAGE}@{plugin}, which this toolcell ({WIT_PACKAGE}@{host}) \
             cannot load: rebuild it against {WIT_PACKAGE}@{host}"
        ));
    }
    if plugin > host {
        return Err(format!(
            "it was built for {WIT_PACKAGE}@{plugin}, newer than this toolcell's \
             {WIT_PACKAGE}@{host}: update toolcell"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).expect("test version parses")
    }

    #[test]
    fn the_constant_matches_the_wit_file() {
        let wit = include_str!("../../wit/plugin.wit");
        assert!(
            wit.contains(&format!("package {WIT_PACKAGE}@{WIT_VERSION};")),
            "wit/plugin.wit must declare package {WIT_PACKAGE}@{WIT_VERSION}"
        );
        assert_eq!(host_version(), v(WIT_VERSION));
    }

    #[test]
    fn older_versions_of_the_series_load_and_others_do_not() {
        let host = v("0.1.2");
        assert!(check_compatible(&v("0.1.0"), &host).is_ok());
        assert!(check_compatible(&v("0.1.2"), &host).is_ok());
        for (plugin, expected) in [
            ("0.2.0", "cannot load"),
            ("0.0.9", "cannot load"),
            ("1.1.1", "cannot load"),
            ("0.1.3", "newer than"),
        ] {
            let error = check_compatible(&v(plugin), &host).expect_err(plugin);
            assert!(
                error.contains(&format!("@{plugin}")) && error.contains("@0.1.2"),
                "{error}"
            );
            assert!(error.contains(expected), "{error}");
        }
        let host = v("1.4.0");
        assert!(check_compatible(&v("1.0.3"), &host).is_ok());
        assert!(check_compatible(&v("2.0.0"), &host).is_err());
    }
}
