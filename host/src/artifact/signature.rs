//! Ed25519 signatures over plugin artifacts, and the trust policy that judges them.
//!
//! `toolcell sign` appends a `toolcell-signature` custom section to a `.wasm`:
//!
//! ```toml
//! algorithm = "ed25519"
//! key = "BASE64 of the 32-byte public key"
//! signature = "BASE64 of the 64-byte signature"
//! ```
//!
//! The signature covers the artifact without its signature sections (so several people
//! can sign the same artifact): the signed message is [`SIGNATURE_CONTEXT`] followed by
//! the SHA-256 of those bytes. Keys are `ed25519-dalek` keys; secret keys are stored as
//! PKCS#8 PEM (`openssl genpkey -algorithm ed25519` makes the same files), public keys
//! are written as base64.
//!
//! The trust policy (`[trust]` in the config file) lists the trusted public keys and
//! says whether unsigned plugins (and plugins signed only by other keys) may load. A
//! signature that does not verify always refuses the plugin.
//!
//! Keys, signing and checking signatures need the `signing` feature. Without it no key
//! can be trusted (a `[trust] keys` entry is an error) and a signed artifact is judged
//! [`Verdict::Unchecked`].

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "signing")]
use base64::Engine;
#[cfg(feature = "signing")]
use base64::engine::general_purpose::STANDARD as BASE64;
#[cfg(feature = "signing")]
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
#[cfg(feature = "signing")]
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::Deserialize;
#[cfg(feature = "signing")]
use serde::Serialize;
#[cfg(feature = "signing")]
use sha2::{Digest, Sha256};

use crate::artifact::Artifact;
#[cfg(feature = "signing")]
use crate::artifact::SIGNATURE_SECTION;

/// What every signature signs before the artifact's digest, so a toolcell signature
/// can never be mistaken for a signature of anything else.
pub const SIGNATURE_CONTEXT: &[u8] = b"toolcell plugin signature v1\n";

/// Why a signature cannot be checked, or a key trusted, without the `signing` feature.
pub const SIGNING_UNAVAILABLE: &str =
    "this toolcell was built without the `signing` feature, so it cannot check signatures";

/// An Ed25519 public key: who signed, or whom the user trusts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(Key);

#[cfg(feature = "signing")]
type Key = VerifyingKey;

/// Without the `signing` feature no key can be parsed, so none exists.
#[cfg(not(feature = "signing"))]
type Key = std::convert::Infallible;

impl fmt::Display for PublicKey {
    /// The key as base64 (44 characters).
    #[cfg(feature = "signing")]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&BASE64.encode(self.0.as_bytes()))
    }

    #[cfg(not(feature = "signing"))]
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {}
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

/// Why a key could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text is not base64.
    #[error("{0:?} is not a base64 Ed25519 public key")]
    NotBase64(String),
    /// It decodes to something other than 32 bytes.
    #[error("{0:?} is not an Ed25519 public key (it must decode to 32 bytes)")]
    WrongLength(String),
    /// The 32 bytes are not a point of the curve.
    #[error("{0:?} is not a valid Ed25519 public key")]
    NotAKey(String),
    /// The text is not a PKCS#8 PEM Ed25519 private key.
    #[error("not an Ed25519 private key in PKCS#8 PEM form: {0}")]
    NotASecretKey(String),
    /// The key could not be encoded.
    #[error("cannot encode the key: {0}")]
    Encoding(String),
    /// This toolcell was built without the `signing` feature: no key can be trusted.
    #[error("cannot trust key {0:?}: {SIGNING_UNAVAILABLE}")]
    SigningUnavailable(String),
}

impl FromStr for PublicKey {
    type Err = KeyError;

    /// Parses the base64 form that [`PublicKey`]'s `Display` writes.
    #[cfg(feature = "signing")]
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let bytes = BASE64
            .decode(text)
            .map_err(|_| KeyError::NotBase64(text.to_string()))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| KeyError::WrongLength(text.to_string()))?;
        VerifyingKey::from_bytes(&bytes)
            .map(PublicKey)
            .map_err(|_| KeyError::NotAKey(text.to_string()))
    }

    #[cfg(not(feature = "signing"))]
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Err(KeyError::SigningUnavailable(text.trim().to_string()))
    }
}

impl<'de> Deserialize<'de> for PublicKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A secret signing key.
#[cfg(feature = "signing")]
pub struct SecretKey(SigningKey);

#[cfg(feature = "signing")]
impl SecretKey {
    /// A new random key from the operating system's generator.
    pub fn generate() -> SecretKey {
        SecretKey(SigningKey::generate(&mut rand_core::OsRng))
    }

    /// Reads a PKCS#8 PEM key (as `toolcell keygen` or `openssl genpkey -algorithm
    /// ed25519` write it).
    pub fn from_pem(text: &str) -> Result<SecretKey, KeyError> {
        SigningKey::from_pkcs8_pem(text)
            .map(SecretKey)
            .map_err(|error| KeyError::NotASecretKey(error.to_string()))
    }

    /// The key as PKCS#8 PEM.
    pub fn to_pem(&self) -> Result<String, KeyError> {
        self.0
            .to_pkcs8_pem(Default::default())
            .map(|pem| pem.to_string())
            .map_err(|error| KeyError::Encoding(error.to_string()))
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }
}

/// One signature section as written.
#[cfg(feature = "signing")]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SignatureDocument {
    algorithm: String,
    key: String,
    signature: String,
}

/// The message a signature signs: the context and the digest of the signed content.
#[cfg(feature = "signing")]
fn message(artifact: &Artifact<'_>) -> Vec<u8> {
    let digest = Sha256::digest(artifact.signed_content());
    let mut message = SIGNATURE_CONTEXT.to_vec();
    message.extend_from_slice(&digest);
    message
}

/// The artifact with one more signature, by `key`.
#[cfg(feature = "signing")]
pub fn sign(artifact: &Artifact<'_>, key: &SecretKey) -> Vec<u8> {
    let signature = key.0.sign(&message(artifact));
    let document = SignatureDocument {
        algorithm: "ed25519".to_string(),
        key: key.public().to_string(),
        signature: BASE64.encode(signature.to_bytes()),
    };
    // Serializing three strings cannot fail.
    let text = toml::to_string(&document).unwrap_or_default();
    artifact.rewrite(&[], &[(SIGNATURE_SECTION, text.as_bytes())])
}

/// The keys whose signatures on the artifact verify; the error describes the first
/// signature section that is malformed or does not verify (or, without the `signing`
/// feature, says that signatures cannot be checked).
pub fn verify(artifact: &Artifact<'_>) -> Result<Vec<PublicKey>, String> {
    if artifact.signatures().is_empty() {
        return Ok(Vec::new());
    }
    check_signatures(artifact)
}

#[cfg(not(feature = "signing"))]
fn check_signatures(_: &Artifact<'_>) -> Result<Vec<PublicKey>, String> {
    Err(format!(
        "its signatures were not checked: {SIGNING_UNAVAILABLE}"
    ))
}

#[cfg(feature = "signing")]
fn check_signatures(artifact: &Artifact<'_>) -> Result<Vec<PublicKey>, String> {
    let message = message(artifact);
    let mut keys = Vec::new();
    for (index, section) in artifact.signatures().iter().enumerate() {
        let which = format!("signature {}", index + 1);
        let text = std::str::from_utf8(section).map_err(|_| format!("{which} is not text"))?;
        let document: SignatureDocument = toml::from_str(text)
            .map_err(|error| format!("{which} is malformed: {}", error.message().trim()))?;
        if document.algorithm != "ed25519" {
            return Err(format!(
                "{which} uses {:?}; only ed25519 is supported",
                document.algorithm
            ));
        }
        let key: PublicKey = document
            .key
            .parse()
            .map_err(|error| format!("{which}: {error}"))?;
        let bytes = BASE64
            .decode(document.signature.trim())
            .map_err(|_| format!("{which}: the signature is not base64"))?;
        let bytes: [u8; 64] = bytes
            .try_into()
            .map_err(|_| format!("{which}: an Ed25519 signature is 64 bytes"))?;
        key.0
            .verify_strict(&message, &Signature::from_bytes(&bytes))
            .map_err(|_| {
                format!("{which}, by key {key}, does not match the artifact: it was changed after signing")
            })?;
        keys.push(key);
    }
    Ok(keys)
}

/// Whether plugins without a signature by a trusted key may load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnsignedPolicy {
    /// They load (the default); a signature by an unknown key is reported.
    #[default]
    Allow,
    /// They are refused.
    Refuse,
}

/// The user's trust policy: `[trust]` in the config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustPolicy {
    /// The public keys whose signatures the user trusts.
    #[serde(default)]
    pub keys: Vec<PublicKey>,
    /// What happens to plugins no trusted key signed.
    #[serde(default)]
    pub unsigned: UnsignedPolicy,
}

/// What the trust policy makes of one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by this trusted key.
    Trusted(PublicKey),
    /// Not signed; loads only when unsigned plugins are allowed.
    Unsigned,
    /// Validly signed, but by none of the trusted keys.
    Untrusted(Vec<PublicKey>),
    /// A signature is malformed or does not verify: always refused.
    Invalid(String),
    /// Signed, but this toolcell cannot check signatures (it was built without the
    /// `signing` feature): loads, with a warning, only when unsigned plugins do.
    Unchecked,
}

impl TrustPolicy {
    /// Judges an artifact's signatures.
    pub fn judge(&self, artifact: &Artifact<'_>) -> Verdict {
        if !cfg!(feature = "signing") && !artifact.signatures().is_empty() {
            return Verdict::Unchecked;
        }
        match verify(artifact) {
            Err(message) => Verdict::Invalid(message),
            Ok(keys) if keys.is_empty() => Verdict::Unsigned,
            Ok(keys) => match keys.iter().find(|key| self.keys.contains(key)) {
                Some(key) => Verdict::Trusted(*key),
                None => Verdict::Untrusted(keys),
            },
        }
    }
}

#[cfg(all(test, feature = "signing"))]
mod tests {
    use super::*;

    fn component() -> Vec<u8> {
        crate::artifact::tests::component(&[("payload", b"code")])
    }

    #[test]
    fn a_signature_verifies_and_is_judged_by_the_trusted_keys() {
        let key = SecretKey::generate();
        let bytes = component();
        let signed = sign(&Artifact::parse(&bytes).expect("parses"), &key);
        let artifact = Artifact::parse(&signed).expect("parses");
        assert_eq!(verify(&artifact), Ok(vec![key.public()]));
        let trusting = TrustPolicy {
            keys: vec![key.public()],
            unsigned: UnsignedPolicy::Refuse,
        };
        assert_eq!(trusting.judge(&artifact), Verdict::Trusted(key.public()));
        assert_eq!(
            TrustPolicy::default().judge(&artifact),
            Verdict::Untrusted(vec![key.public()])
        );
        let unsigned = Artifact::parse(&bytes).expect("parses");
        assert_eq!(trusting.judge(&unsigned), Verdict::Unsigned);
    }

    #[test]
    fn two_signers_sign_the_same_content() {
        let (first, second) = (SecretKey::generate(), SecretKey::generate());
        let bytes = component();
        let once = sign(&Artifact::parse(&bytes).expect("parses"), &first);
        let twice = sign(&Artifact::parse(&once).expect("parses"), &second);
        let artifact = Artifact::parse(&twice).expect("parses");
        assert_eq!(verify(&artifact), Ok(vec![first.public(), second.public()]));
    }

    #[test]
    fn a_changed_artifact_fails_verification() {
        let key = SecretKey::generate();
        let bytes = component();
        let signed = sign(&Artifact::parse(&bytes).expect("parses"), &key);
        let mut tampered = signed.clone();
        let at = tampered
            .windows(4)
            .position(|window| window == b"code")
            .expect("the payload is in the file");
        tampered[at] = b'C';
        let artifact = Artifact::parse(&tampered).expect("parses");
        let error = verify(&artifact).expect_err("refused");
        assert!(error.contains("was changed after signing"), "{error}");
        assert!(matches!(
            TrustPolicy::default().judge(&artifact),
            Verdict::Invalid(_)
        ));
    }

    #[test]
    fn keys_round_trip_through_their_text_forms() {
        let key = SecretKey::generate();
        let pem = key.to_pem().expect("encodes");
        let again = SecretKey::from_pem(&pem).expect("decodes");
        assert_eq!(again.public(), key.public());
        let public: PublicKey = key.public().to_string().parse().expect("parses");
        assert_eq!(public, key.public());
        assert!("not a key".parse::<PublicKey>().is_err());
        assert!(SecretKey::from_pem("nope").is_err());
    }
}

#[cfg(all(test, not(feature = "signing")))]
mod without_signing {
    use super::*;
    use crate::artifact::SIGNATURE_SECTION;
    use crate::artifact::tests::component;

    #[test]
    fn no_key_can_be_trusted() {
        let error = "Gb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE="
            .parse::<PublicKey>()
            .expect_err("refused");
        assert!(error.to_string().ends_with(SIGNING_UNAVAILABLE), "{error}");
    }

    #[test]
    fn a_signed_artifact_is_unchecked_and_an_unsigned_one_unsigned() {
        let signed = component(&[(SIGNATURE_SECTION, b"algorithm = \"ed25519\"")]);
        let artifact = Artifact::parse(&signed).expect("parses");
        assert_eq!(TrustPolicy::default().judge(&artifact), Verdict::Unchecked);
        let error = verify(&artifact).expect_err("not checked");
        assert!(error.ends_with(SIGNING_UNAVAILABLE), "{error}");

        let unsigned = component(&[("payload", b"code")]);
        let artifact = Artifact::parse(&unsigned).expect("parses");
        assert_eq!(TrustPolicy::default().judge(&artifact), Verdict::Unsigned);
        assert_eq!(verify(&artifact), Ok(Vec::new()));
    }
}
