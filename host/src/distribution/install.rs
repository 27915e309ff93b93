//! `pull` and `install`: what is downloaded passes every check a plugin file passes
//! when it loads (the trust policy on its signatures, its WIT version, its manifest)
//! before a byte of it is written; `install` then records it in the lock file, and
//! re-installs exactly what a lock file records.

use std::path::{Path, PathBuf};

use super::DistributionError;
use super::lock::{Entry, LockFile, Record};
use super::reference::ArtifactRef;
use super::registry::{self, Pulled, RegistryOptions};
use crate::artifact::integrity::Pins;
use crate::artifact::manifest::Manifest;
use crate::artifact::signature::{PublicKey, TrustPolicy};
use crate::base::atomic_file::{Readers, write_atomically};
use crate::engine::cache::sha256_hex;
use crate::runtime::admission::{self, Admission};

/// A pulled plugin that passed the checks, not yet written.
pub struct Verified {
    /// What the registry gave.
    pub pulled: Pulled,
    /// Its manifest.
    pub manifest: Manifest,
    /// The trusted key that signed it, if one did.
    pub signer: Option<PublicKey>,
    /// Warnings the checks raised that did not refuse it (a signature by a key that
    /// is not trusted, when the policy allows that).
    pub warnings: Vec<String>,
}

impl Verified {
    /// The file name it gets in a plugin directory: its id, `.wasm`, with the `/` of
    /// a namespaced id written `+` (`acme/notes` → `acme+notes.wasm`), a character no
    /// id contains.
    pub fn file_name(&self) -> String {
        crate::manifest::file_name_of(&self.manifest.id, "wasm")
    }
}

/// A plugin written to a plugin directory.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The plugin's id.
    pub id: String,
    /// Its version.
    pub version: semver::Version,
    /// Where it was written.
    pub path: PathBuf,
    /// Where it came from, pinned to the manifest's digest.
    pub reference: ArtifactRef,
    /// The trusted key that signed it, if one did.
    pub signer: Option<PublicKey>,
    /// Warnings the checks raised that did not refuse it.
    pub warnings: Vec<String>,
}

/// Pulls `reference` and checks it as a plugin file is checked when it loads.
pub async fn pull_verified(
    reference: &ArtifactRef,
    options: &RegistryOptions,
    trust: &TrustPolicy,
) -> Result<Verified, DistributionError> {
    let pulled = registry::pull(reference, options).await?;
    verify(pulled, trust)
}

fn verify(pulled: Pulled, trust: &TrustPolicy) -> Result<Verified, DistributionError> {
    let admission = Admission {
        pins: &Pins::default(),
        trust,
    };
    let source = admission::admit_component(&pulled.bytes, &admission).map_err(|refusal| {
        DistributionError::Refused {
            reference: pulled.reference.to_string(),
            code: refusal.kind.code(),
            why: refusal.message,
        }
    })?;
    Ok(Verified {
        manifest: source.manifest,
        signer: source.signer,
        warnings: source
            .warnings
            .into_iter()
            .map(|(_, _, message)| message)
            .collect(),
        pulled,
    })
}

/// Writes a verified plugin to `path`, creating its directory if need be.
fn write(verified: &Verified, path: &Path) -> Result<(), DistributionError> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|error| {
            DistributionError::Write(format!("cannot create {}: {error}", dir.display()))
        })?;
    }
    write_atomically(path, &verified.pulled.bytes, Readers::Everyone)
        .map_err(|error| DistributionError::Write(error.to_string()))
}

/// Pulls `reference` into `dir` as `ID.wasm`, after the checks.
pub async fn pull_into(
    reference: &ArtifactRef,
    dir: &Path,
    options: &RegistryOptions,
    trust: &TrustPolicy,
) -> Result<Installed, DistributionError> {
    let verified = pull_verified(reference, options, trust).await?;
    let path = dir.join(verified.file_name());
    write(&verified, &path)?;
    Ok(installed(verified, path))
}

fn installed(verified: Verified, path: PathBuf) -> Installed {
    Installed {
        id: verified.manifest.id,
        version: verified.manifest.version,
        path,
        reference: verified.pulled.reference,
        signer: verified.signer,
        warnings: verified.warnings,
    }
}

/// Installs plugins into one plugin directory and records them in one lock file.
pub struct Installer {
    /// How to reach registries.
    pub options: RegistryOptions,
    /// The trust policy pulled plugins must satisfy.
    pub trust: TrustPolicy,
    /// Where plugin files go.
    pub plugin_dir: PathBuf,
    /// The lock file that records them.
    pub lock: PathBuf,
}

impl Installer {
    /// Pulls `reference` into the plugin directory as `ID.wasm` and records it in the
    /// lock file (replacing an earlier record of the same file).
    pub async fn install(&self, reference: &ArtifactRef) -> Result<Installed, DistributionError> {
        let mut lock = LockFile::read(&self.lock)?;
        let verified = pull_verified(reference, &self.options, &self.trust).await?;
        let file = verified.file_name();
        let path = self.plugin_dir.join(&file);
        let entry = Entry {
            record: Record {
                id: verified.manifest.id.clone(),
                reference: reference.clone(),
                digest: verified.pulled.digest.clone(),
                signer: verified.signer,
                file,
            },
            sha256: sha256_hex(&verified.pulled.bytes),
        };
        lock.set(entry, &self.plugin_dir)?;
        write(&verified, &path)?;
        lock.save()?;
        Ok(installed(verified, path))
    }

    /// Re-installs every plugin the lock file records, each pulled by its manifest
    /// digest and checked against the file's SHA-256, its signer and the trust policy.
    /// Nothing is written unless every one passes.
    pub async fn reinstall(&self) -> Result<Vec<Installed>, DistributionError> {
        let lock = LockFile::read(&self.lock)?;
        let entries = lock.entries(&self.plugin_dir)?;
        if entries.is_empty() {
            return Err(DistributionError::Lock(format!(
                "{} records no installed plugin (`#@` lines); install one with `toolcell install REF`",
                lock.path().display()
            )));
        }
        let mut verified = Vec::new();
        for entry in entries {
            let record = &entry.record;
            let pinned = record.reference.pinned(&record.digest);
            let plugin = pull_verified(&pinned, &self.options, &self.trust).await?;
            let refuse = |why: String| DistributionError::Refused {
                reference: pinned.to_string(),
                code: "digest_mismatch",
                why,
            };
            let sha256 = sha256_hex(&plugin.pulled.bytes);
            if sha256 != entry.sha256 {
                return Err(refuse(format!(
                    "its SHA-256 is {sha256}, but {} pins {} for {}",
                    lock.path().display(),
                    entry.sha256,
                    record.file
                )));
            }
            if plugin.manifest.id != record.id {
                return Err(refuse(format!(
                    "its id is {:?}, but the lock records {:?}",
                    plugin.manifest.id, record.id
                )));
            }
            if let Some(signer) = record.signer
                && plugin.signer != Some(signer)
            {
                return Err(DistributionError::Refused {
                    reference: pinned.to_string(),
                    code: "signature_untrusted",
                    why: format!(
                        "the lock records it as signed by {signer}, and the trust policy does \
                         not trust that key ([trust] keys)"
                    ),
                });
            }
            // A record's file is a plain name (checked as the lock was read): this
            // writes inside the plugin directory and nowhere else.
            verified.push((plugin, self.plugin_dir.join(&record.file)));
        }
        let mut done = Vec::new();
        for (plugin, path) in verified {
            write(&plugin, &path)?;
            done.push(installed(plugin, path));
        }
        Ok(done)
    }
}
