//! Which versions of the `toolcell:plugin` WIT package this toolcell can load.
//!
//! The package follows semantic versioning: a plugin built against an older version of
//! the same series (same major version; for 0.x, the same minor version) only uses
//! what this toolcell still provides, so it loads; wasmtime links its imports and
//! finds its exports by the same rule. Besides its own series, this toolcell links the
//! last version of each older series it still supports ([`LEGACY_WIT_VERSIONS`],
//! `wit/0.2/plugin.wit`, `wit/0.1/plugin.wit`), so plugins built for those load too. A plugin of any other
//! series, or one newer than what this toolcell links of its series, is refused with
//! both versions named.

use semver::Version;

use crate::artifact::WIT_PACKAGE;

/// The version of `wit/plugin.wit` this toolcell was built with.
pub const WIT_VERSION: &str = "0.3.0";

/// The last version of each older series this toolcell still links, and so loads.
pub const LEGACY_WIT_VERSIONS: &[&str] = &["0.2.0", "0.1.2"];

/// Why a plugin's WIT version cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WitVersionError {
    /// Its series is not one this toolcell links.
    #[error(
        "it was built for {WIT_PACKAGE}@{plugin}, which this toolcell ({WIT_PACKAGE}@{host}) \
         cannot load: rebuild it against {WIT_PACKAGE}@{host}"
    )]
    OtherSeries {
        /// The plugin's version.
        plugin: Version,
        /// This toolcell's version.
        host: Version,
    },
    /// It is newer than what this toolcell links of its series.
    #[error(
        "it was built for {WIT_PACKAGE}@{plugin}, newer than this toolcell's \
         {WIT_PACKAGE}@{linked}: update toolcell"
    )]
    Newer {
        /// The plugin's version.
        plugin: Version,
        /// The newest version of the plugin's series this toolcell links.
        linked: Version,
    },
}

/// This toolcell's WIT version, parsed.
pub fn host_version() -> Version {
    // A unit test checks that WIT_VERSION parses and matches wit/plugin.wit.
    Version::parse(WIT_VERSION).unwrap_or_else(|_| Version::new(0, 0, 0))
}

/// Whether this toolcell can load a plugin built against `plugin`; the error names
/// both versions and what to do.
pub fn check(plugin: &Version) -> Result<(), WitVersionError> {
    // A unit test checks that every legacy version parses.
    let legacy: Vec<Version> = LEGACY_WIT_VERSIONS
        .iter()
        .filter_map(|text| Version::parse(text).ok())
        .collect();
    check_against(plugin, &host_version(), &legacy)
}

/// [`check`] for a host of version `host` that also links `legacy`.
fn check_against(
    plugin: &Version,
    host: &Version,
    legacy: &[Version],
) -> Result<(), WitVersionError> {
    let linked = std::iter::once(host)
        .chain(legacy)
        .find(|linked| same_series(plugin, linked))
        .ok_or_else(|| WitVersionError::OtherSeries {
            plugin: plugin.clone(),
            host: host.clone(),
        })?;
    if plugin > linked {
        return Err(WitVersionError::Newer {
            plugin: plugin.clone(),
            linked: linked.clone(),
        });
    }
    Ok(())
}

/// Whether `plugin` is of the series of `linked`: the same major version; for 0.x the
/// same minor version; for 0.0.x the same version.
fn same_series(plugin: &Version, linked: &Version) -> bool {
    if linked.major > 0 {
        plugin.major == linked.major
    } else if linked.minor > 0 {
        plugin.major == 0 && plugin.minor == linked.minor
    } else {
        plugin.major == 0 && plugin.minor == 0 && plugin.patch == linked.patch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).expect("test version parses")
    }

    #[test]
    fn the_constants_match_the_wit_files() {
        let wit = include_str!("../../../wit/plugin.wit");
        assert!(
            wit.contains(&format!("package {WIT_PACKAGE}@{WIT_VERSION};")),
            "wit/plugin.wit must declare package {WIT_PACKAGE}@{WIT_VERSION}"
        );
        assert_eq!(host_version(), v(WIT_VERSION));
        assert_eq!(LEGACY_WIT_VERSIONS, ["0.2.0", "0.1.2"]);
        let legacy = include_str!("../../../wit/0.2/plugin.wit");
        assert!(legacy.contains(&format!("package {WIT_PACKAGE}@0.2.0;")));
        let legacy = include_str!("../../../wit/0.1/plugin.wit");
        assert!(legacy.contains(&format!("package {WIT_PACKAGE}@0.1.2;")));
    }

    #[test]
    fn this_series_and_the_linked_older_ones_load_and_others_do_not() {
        assert_eq!(WIT_VERSION, "0.3.0", "update the versions below");
        for loads in ["0.3.0", "0.2.0", "0.1.0", "0.1.1", "0.1.2"] {
            assert_eq!(check(&v(loads)), Ok(()), "{loads}");
        }
        for (plugin, linked, expected) in [
            (
                "0.4.0",
                "0.3.0",
                "cannot load: rebuild it against toolcell:plugin@0.3.0",
            ),
            ("0.0.9", "0.3.0", "cannot load"),
            ("1.1.1", "0.3.0", "cannot load"),
            (
                "0.3.1",
                "0.3.0",
                "newer than this toolcell's toolcell:plugin@0.3.0",
            ),
            (
                "0.2.1",
                "0.2.0",
                "newer than this toolcell's toolcell:plugin@0.2.0",
            ),
            (
                "0.1.3",
                "0.1.2",
                "newer than this toolcell's toolcell:plugin@0.1.2",
            ),
        ] {
            let error = check(&v(plugin)).expect_err(plugin).to_string();
            assert!(
                error.contains(&format!("@{plugin}")) && error.contains(&format!("@{linked}")),
                "{error}"
            );
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn a_major_series_takes_every_older_version_of_it() {
        let host = v("1.4.0");
        assert!(check_against(&v("1.0.3"), &host, &[]).is_ok());
        assert!(check_against(&v("2.0.0"), &host, &[]).is_err());
        assert!(check_against(&v("0.9.0"), &host, &[v("0.9.2")]).is_ok());
    }
}
