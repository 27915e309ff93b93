//! Digest pins: which plugin files the user agreed to run, by SHA-256.
//!
//! Pins come from a lock file (`--lock FILE`) and from `--require-sha256 HEX`. When any
//! are given, every file toolcell reads code or a manifest from (`*.lua`, `*.wasm` and
//! `*.lua.toml` sidecars) must match: its lock entry, or one of the required digests.
//! Anything else is refused before it is compiled or run.
//!
//! A lock file is what `sha256sum` prints: one `HEX  PATH` line per file (`#` starts a
//! comment). Relative paths are relative to the lock file's directory. `toolcell
//! install` adds `#@` lines saying where each file came from (`distribution::lock`);
//! to this module, and to `sha256sum -c`, they are comments.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The digests plugin files must match.
#[derive(Debug, Clone, Default)]
pub struct Pins {
    /// Lock entries by canonical path.
    lock: HashMap<PathBuf, String>,
    /// The lock file, for messages.
    lock_file: Option<PathBuf>,
    /// Digests any file may have.
    digests: Vec<String>,
}

/// A lock file or pin that could not be used; the text says what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PinError(pub String);

/// Why a file's digest does not satisfy the pins.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinMismatch {
    /// The lock file pins another digest for it.
    #[error("its SHA-256 is {digest}, but {} pins {pinned}", lock.display())]
    Changed {
        /// The file's digest.
        digest: String,
        /// The lock file.
        lock: PathBuf,
        /// The digest the lock file pins.
        pinned: String,
    },
    /// The lock file does not list it (and no digest is pinned for every file).
    #[error("it is not listed in {}", lock.display())]
    NotListed {
        /// The lock file.
        lock: PathBuf,
    },
    /// Its digest is none of those pinned for every file.
    #[error("its SHA-256 {digest} matches none of the pinned digests")]
    NotPinned {
        /// The file's digest.
        digest: String,
    },
}

impl Pins {
    /// Whether no pins were given (every file is accepted).
    pub fn is_empty(&self) -> bool {
        self.lock_file.is_none() && self.digests.is_empty()
    }

    /// The lock file the pins were read from, if any.
    pub fn lock_file(&self) -> Option<&Path> {
        self.lock_file.as_deref()
    }

    /// Adds a digest every plugin file may have (`--require-sha256`).
    pub fn require(&mut self, digest: &str) -> Result<(), PinError> {
        self.digests.push(parse_digest(digest).map_err(PinError)?);
        Ok(())
    }

    /// Reads a lock file and adds its entries.
    pub fn load_lock(&mut self, path: &Path) -> Result<(), PinError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            PinError(format!(
                "cannot read the lock file {}: {error}",
                path.display()
            ))
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for (number, line) in text.lines().enumerate() {
            let entry = parse_lock_line(line).map_err(|message| {
                PinError(format!("{}:{}: {message}", path.display(), number + 1))
            })?;
            if let Some((digest, file)) = entry {
                self.lock.insert(canonical(&base.join(file)), digest);
            }
        }
        self.lock_file = Some(path.to_path_buf());
        Ok(())
    }

    /// Checks a file's digest against the pins; the error says why it is refused.
    pub fn check(&self, file: &Path, digest: &str) -> Result<(), PinMismatch> {
        if self.is_empty() || self.digests.iter().any(|pin| pin == digest) {
            return Ok(());
        }
        let locked = self.lock.get(&canonical(file));
        match (locked, &self.lock_file) {
            (Some(pin), _) if pin == digest => Ok(()),
            (Some(pin), Some(lock)) => Err(PinMismatch::Changed {
                digest: digest.to_string(),
                lock: lock.clone(),
                pinned: pin.clone(),
            }),
            (None, Some(lock)) if self.digests.is_empty() => {
                Err(PinMismatch::NotListed { lock: lock.clone() })
            }
            _ => Err(PinMismatch::NotPinned {
                digest: digest.to_string(),
            }),
        }
    }
}

/// One line of a lock file: `Some((digest, file))` for an entry, `None` for a blank
/// line or a comment (`#`, which includes `toolcell install`'s `#@` records).
pub(crate) fn parse_lock_line(line: &str) -> Result<Option<(String, &str)>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let Some((digest, file)) = line.split_once(char::is_whitespace) else {
        return Err("expected `SHA256  PATH`".to_string());
    };
    let digest = parse_digest(digest)?;
    // sha256sum marks binary mode with '*' before the name.
    let file = file.trim_start();
    let file = file.strip_prefix('*').unwrap_or(file);
    if file.is_empty() {
        return Err("the entry names no file".to_string());
    }
    Ok(Some((digest, file)))
}

/// A SHA-256 in hex, normalized to lower case.
fn parse_digest(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.len() == 64 && text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(format!("{text:?} is not a SHA-256 (64 hex digits)"))
    }
}

/// The canonical path when the file exists, else the path as given.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn without_pins_everything_passes() {
        assert!(Pins::default().check(Path::new("x.wasm"), A).is_ok());
    }

    #[test]
    fn required_digests_are_an_allow_list() {
        let mut pins = Pins::default();
        pins.require(&A.to_uppercase()).expect("a digest");
        assert!(pins.check(Path::new("x.wasm"), A).is_ok());
        let error = pins.check(Path::new("x.wasm"), B).expect_err("refused");
        assert_eq!(
            error,
            PinMismatch::NotPinned {
                digest: B.to_string()
            }
        );
        assert!(error.to_string().contains("matches none"), "{error}");
        assert!(pins.require("abc").is_err());
    }

    #[test]
    fn a_lock_file_pins_each_file_by_path() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.wasm"), "a").expect("write");
        std::fs::write(dir.path().join("b.wasm"), "b").expect("write");
        let lock = dir.path().join("toolcell.lock");
        std::fs::write(&lock, format!("# pins\n{A}  a.wasm\n{B} *b.wasm\n")).expect("write");
        let mut pins = Pins::default();
        pins.load_lock(&lock).expect("the lock parses");
        assert!(pins.check(&dir.path().join("a.wasm"), A).is_ok());
        assert!(pins.check(&dir.path().join("b.wasm"), B).is_ok());
        let error = pins
            .check(&dir.path().join("a.wasm"), B)
            .expect_err("a changed file is refused");
        assert!(matches!(error, PinMismatch::Changed { .. }));
        assert!(error.to_string().contains(&format!("pins {A}")), "{error}");
        let error = pins
            .check(&dir.path().join("c.wasm"), A)
            .expect_err("an unlisted file is refused");
        assert_eq!(error, PinMismatch::NotListed { lock });
    }

    #[test]
    fn a_bad_lock_line_is_reported_with_its_position() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lock = dir.path().join("bad.lock");
        std::fs::write(&lock, format!("{A}  a.wasm\nnot-a-digest  b.wasm\n")).expect("write");
        let error = Pins::default().load_lock(&lock).expect_err("refused");
        assert!(error.0.contains("bad.lock:2:"), "{error}");
    }
}
