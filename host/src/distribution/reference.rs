//! Where an artifact lives: `REGISTRY/REPOSITORY:TAG[@sha256:DIGEST]`, and whether
//! its registry may be spoken to over plain HTTP.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use oci_client::Reference;

use super::DistributionError;

/// A reference to an artifact in an OCI registry.
///
/// Written as `REGISTRY/REPOSITORY:TAG`, optionally pinned by `@sha256:DIGEST` (then the
/// digest decides what is pulled and the tag is only a label), with an optional
/// `oci://` prefix. A reference without a registry (`hello:1.0`) means Docker Hub, as
/// it does for Docker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRef(Reference);

impl FromStr for ArtifactRef {
    type Err = DistributionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bare = text.strip_prefix("oci://").unwrap_or(text);
        let invalid = |why: String| DistributionError::Reference {
            reference: text.to_string(),
            why,
        };
        let reference = Reference::from_str(bare).map_err(|error| invalid(error.to_string()))?;
        if let Some(digest) = reference.digest()
            && !is_sha256(digest)
        {
            return Err(invalid(format!(
                "the digest {digest} is not sha256:<64 hex digits>"
            )));
        }
        Ok(ArtifactRef(reference))
    }
}

impl fmt::Display for ArtifactRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.whole())
    }
}

impl ArtifactRef {
    /// The registry as written (`127.0.0.1:5000`, `ghcr.io`).
    pub fn registry(&self) -> &str {
        self.0.registry()
    }

    /// The manifest digest the reference pins, if it pins one.
    pub fn digest(&self) -> Option<&str> {
        self.0.digest()
    }

    /// The same reference pinned to `digest` (the tag is kept as a label).
    pub fn pinned(&self, digest: &str) -> ArtifactRef {
        let reference = match self.0.tag() {
            Some(tag) => Reference::with_tag_and_digest(
                self.0.registry().to_string(),
                self.0.repository().to_string(),
                tag.to_string(),
                digest.to_string(),
            ),
            None => Reference::with_digest(
                self.0.registry().to_string(),
                self.0.repository().to_string(),
                digest.to_string(),
            ),
        };
        ArtifactRef(reference)
    }

    /// The reference as the OCI client takes it.
    pub(super) fn oci_client_reference(&self) -> &Reference {
        &self.0
    }

    /// Whether the registry is on this machine (`localhost`, 127.0.0.0/8, `[::1]`), the
    /// only place plain HTTP is used without `--plain-http`.
    pub fn is_loopback(&self) -> bool {
        is_loopback_registry(self.registry())
    }
}

/// Whether `registry` (a host, optionally with a port) names this machine.
fn is_loopback_registry(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        // [::1]:5000
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => match registry.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|byte| byte.is_ascii_digit()) => host,
            _ => registry,
        },
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Whether `digest` is `sha256:` and 64 lower-case hex digits.
pub(super) fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_parse_with_tags_digests_and_an_oci_prefix() {
        let plain: ArtifactRef = "127.0.0.1:5000/plugins/hello:1.0".parse().expect("parses");
        assert_eq!(plain.registry(), "127.0.0.1:5000");
        assert_eq!(plain.digest(), None);
        assert_eq!(plain.to_string(), "127.0.0.1:5000/plugins/hello:1.0");
        let prefixed: ArtifactRef = "oci://127.0.0.1:5000/plugins/hello:1.0"
            .parse()
            .expect("parses");
        assert_eq!(prefixed, plain);
        let pinned: ArtifactRef = format!("ghcr.io/team/hello:1.0@{DIGEST}")
            .parse()
            .expect("parses");
        assert_eq!(pinned.digest(), Some(DIGEST));
        assert_eq!(pinned.pinned(DIGEST), pinned);
        assert_eq!(
            plain.pinned(DIGEST).to_string(),
            format!("127.0.0.1:5000/plugins/hello:1.0@{DIGEST}")
        );
    }

    #[test]
    fn bad_references_are_refused_with_the_reason() {
        let error = "ghcr.io/Team/Hello:1.0"
            .parse::<ArtifactRef>()
            .expect_err("upper case repository");
        assert!(
            error.to_string().contains("ghcr.io/Team/Hello:1.0"),
            "{error}"
        );
        let error = "ghcr.io/team/hello@sha512:abcd"
            .parse::<ArtifactRef>()
            .expect_err("not sha256");
        assert!(
            error.to_string().contains("not a valid OCI reference"),
            "{error}"
        );
    }

    #[test]
    fn only_this_machine_is_loopback() {
        for registry in [
            "localhost:5000",
            "127.0.0.1:5000",
            "127.1.2.3",
            "[::1]:5000",
            "LOCALHOST",
        ] {
            assert!(is_loopback_registry(registry), "{registry}");
        }
        for registry in [
            "ghcr.io",
            "10.0.0.1:5000",
            "localhost.example.com",
            "[::2]:5000",
        ] {
            assert!(!is_loopback_registry(registry), "{registry}");
        }
    }
}
