//! Where `toolcell install` records what it installed: the lock file that `--lock`
//! reads, extended so that old and new readers both keep working.
//!
//! A lock file stays `sha256sum` output (`HEX  PATH` lines, `#` comments: `--lock` of
//! any toolcell and `sha256sum -c` read it as before). Before each installed file's
//! line, `install` writes a record as a comment that starts with `#@`:
//!
//! ```text
//! #@ id=hello ref=registry.example/plugins/hello:1.0.0 digest=sha256:MANIFEST signer=KEY file=hello.wasm
//! 5f0c…  hello.wasm
//! ```
//!
//! `id` is the plugin's id, `ref` the reference it was installed from, `digest` the
//! manifest's digest (what a re-install pulls), `signer` the trusted key that signed it
//! (`none` if no trusted key did), and `file` (last, the rest of the line) the file's
//! name in the plugin directory (`--plugins`): a plain name, never a path, so that a
//! committed lock file cannot make `install` write anywhere else. Its `sha256sum` line
//! gives the same file's path relative to the lock file, as `--lock` and `sha256sum -c`
//! read it. Every other line, hand-written pins and comments included, is kept as it
//! is when the file is rewritten.

use std::path::{Component, Path, PathBuf};

use super::DistributionError;
use super::reference::{ArtifactRef, is_sha256};
use crate::artifact::integrity::parse_lock_line;
use crate::artifact::signature::PublicKey;
use crate::base::atomic_file::{Readers, write_atomically};

/// The prefix of a record line.
const RECORD: &str = "#@";

/// The first lines of a lock file `install` creates.
const HEADER: &str = "\
# toolcell lock file: `toolcell serve --lock FILE` (or call, list, check) loads only
# plugin files whose SHA-256 matches a line below (`sha256sum -c` checks them too).
# `#@` lines record where `toolcell install` got each file; `toolcell install --lock
# FILE` with no reference re-installs exactly those.
";

/// Where one installed file came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The plugin's id.
    pub id: String,
    /// The reference it was installed from, as given (a tag, or a digest).
    pub reference: ArtifactRef,
    /// The manifest's digest (`sha256:...`).
    pub digest: String,
    /// The trusted key that signed it, if one did.
    pub signer: Option<PublicKey>,
    /// The file's name in the plugin directory: no directory, no `..`.
    pub file: String,
}

/// A record with the file's SHA-256 from its `sha256sum` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Where it came from.
    pub record: Record,
    /// The file's SHA-256 (hex), from its `sha256sum` line.
    pub sha256: String,
}

/// A lock file's lines, to read records from and to update.
pub struct LockFile {
    path: PathBuf,
    lines: Vec<Line>,
}

enum Line {
    /// A record (boxed: a reference is large beside the other lines).
    Record(Box<Record>),
    /// A `sha256sum` line.
    Pin { sha256: String, file: String },
    /// A comment, a blank line, anything else kept verbatim.
    Other(String),
}

impl LockFile {
    /// Reads `path`; a file that does not exist is an empty lock.
    pub fn read(path: &Path) -> Result<LockFile, DistributionError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => {
                return Err(DistributionError::Lock(format!(
                    "cannot read {}: {error}",
                    path.display()
                )));
            }
        };
        let mut lines = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let at = |message: String| {
                DistributionError::Lock(format!("{}:{}: {message}", path.display(), number + 1))
            };
            if let Some(rest) = line.strip_prefix(RECORD) {
                lines.push(Line::Record(Box::new(parse_record(rest).map_err(at)?)));
                continue;
            }
            match parse_lock_line(line).map_err(at)? {
                Some((sha256, file)) => lines.push(Line::Pin {
                    sha256,
                    file: file.to_string(),
                }),
                None => lines.push(Line::Other(line.to_string())),
            }
        }
        Ok(LockFile {
            path: path.to_path_buf(),
            lines,
        })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record with its file's SHA-256, its file in `plugin_dir`; a record without
    /// a `sha256sum` line for that file is an error.
    pub fn entries(&self, plugin_dir: &Path) -> Result<Vec<Entry>, DistributionError> {
        self.lines
            .iter()
            .filter_map(|line| match line {
                Line::Record(record) => Some(record.as_ref()),
                _ => None,
            })
            .map(|record| {
                let file = plugin_dir.join(&record.file);
                let sha256 = self.lines.iter().find_map(|line| match line {
                    Line::Pin {
                        sha256,
                        file: pinned,
                    } if self.same_file(pinned, &file) => Some(sha256),
                    _ => None,
                });
                match sha256 {
                    Some(sha256) => Ok(Entry {
                        record: record.clone(),
                        sha256: sha256.clone(),
                    }),
                    None => Err(DistributionError::Lock(format!(
                        "{}: the record of {} has no `SHA256  {}` line",
                        self.path.display(),
                        record.file,
                        self.pin_path(&file)
                            .unwrap_or_else(|_| file.display().to_string())
                    ))),
                }
            })
            .collect()
    }

    /// Whether the `sha256sum` line's path `pinned` (relative to the lock file's
    /// directory) names `file`.
    fn same_file(&self, pinned: &str, file: &Path) -> bool {
        let dir = self.path.parent().unwrap_or(Path::new(""));
        let normal = |path: &Path| -> Option<Vec<std::ffi::OsString>> {
            Some(
                std::path::absolute(path)
                    .ok()?
                    .components()
                    .filter(|part| *part != Component::CurDir)
                    .map(|part| part.as_os_str().to_os_string())
                    .collect(),
            )
        };
        normal(&dir.join(pinned)).is_some_and(|pinned| Some(pinned) == normal(file))
    }

    /// How the `sha256sum` line writes the path of `file`: relative to the lock file's
    /// directory when the file is under it, else absolute.
    pub fn pin_path(&self, file: &Path) -> Result<String, DistributionError> {
        let absolute = |path: &Path| {
            std::path::absolute(path).map_err(|error| {
                DistributionError::Lock(format!("cannot resolve {}: {error}", path.display()))
            })
        };
        let file = absolute(file)?;
        let dir = absolute(self.path.parent().unwrap_or(Path::new("")))?;
        let written = file.strip_prefix(&dir).unwrap_or(&file);
        written.to_str().map(str::to_string).ok_or_else(|| {
            DistributionError::Lock(format!("{} is not a UTF-8 path", file.display()))
        })
    }

    /// Replaces the record of `entry.record.file`, and the `sha256sum` line of the same
    /// file, `plugin_dir`'s (or adds them).
    pub fn set(&mut self, entry: Entry, plugin_dir: &Path) -> Result<(), DistributionError> {
        let file = plugin_dir.join(&entry.record.file);
        let pin = self.pin_path(&file)?;
        let lines = std::mem::take(&mut self.lines);
        self.lines = lines
            .into_iter()
            .filter(|line| match line {
                Line::Record(record) => record.file != entry.record.file,
                Line::Pin { file: pinned, .. } => !self.same_file(pinned, &file),
                Line::Other(_) => true,
            })
            .collect();
        if self.lines.is_empty() {
            self.lines
                .extend(HEADER.lines().map(|line| Line::Other(line.to_string())));
        }
        self.lines.push(Line::Record(Box::new(entry.record)));
        self.lines.push(Line::Pin {
            sha256: entry.sha256,
            file: pin,
        });
        Ok(())
    }

    /// Writes the lock file (whole or not at all).
    pub fn save(&self) -> Result<(), DistributionError> {
        let mut text = String::new();
        for line in &self.lines {
            match line {
                Line::Record(record) => text.push_str(&format_record(record)),
                Line::Pin { sha256, file } => text.push_str(&format!("{sha256}  {file}")),
                Line::Other(other) => text.push_str(other),
            }
            text.push('\n');
        }
        write_atomically(&self.path, text.as_bytes(), Readers::Everyone)
            .map_err(|error| DistributionError::Lock(error.to_string()))
    }
}

fn format_record(record: &Record) -> String {
    let signer = record
        .signer
        .map_or_else(|| "none".to_string(), |key| key.to_string());
    format!(
        "{RECORD} id={} ref={} digest={} signer={signer} file={}",
        record.id, record.reference, record.digest, record.file
    )
}

fn parse_record(text: &str) -> Result<Record, String> {
    let (fields, file) = text
        .split_once(" file=")
        .ok_or("a `#@` record ends with file=PATH")?;
    let (mut id, mut reference, mut digest, mut signer) = (None, None, None, None);
    for field in fields.split_whitespace() {
        let (key, value) = field
            .split_once('=')
            .ok_or_else(|| format!("{field:?} is not KEY=VALUE"))?;
        let slot = match key {
            "id" => &mut id,
            "ref" => &mut reference,
            "digest" => &mut digest,
            "signer" => &mut signer,
            other => return Err(format!("unknown field {other:?} in a `#@` record")),
        };
        *slot = Some(value.to_string());
    }
    let missing = |name: &str| format!("the `#@` record has no {name}=");
    let reference: ArtifactRef = reference
        .ok_or_else(|| missing("ref"))?
        .parse()
        .map_err(|error: DistributionError| error.to_string())?;
    let digest = digest.ok_or_else(|| missing("digest"))?;
    if !is_sha256(&digest) {
        return Err(format!("digest={digest} is not sha256:<64 hex digits>"));
    }
    let signer = match signer.ok_or_else(|| missing("signer"))?.as_str() {
        "none" => None,
        key => Some(
            key.parse::<PublicKey>()
                .map_err(|error| error.to_string())?,
        ),
    };
    let file = file.trim();
    if file.is_empty() {
        return Err("the `#@` record names no file".to_string());
    }
    check_file_name(file)?;
    Ok(Record {
        id: id.ok_or_else(|| missing("id"))?,
        reference,
        digest,
        signer,
        file: file.to_string(),
    })
}

/// Checks that a record's `file=` is a plain file name: one component that is neither
/// `.` nor `..`, so that it stays inside the plugin directory.
fn check_file_name(file: &str) -> Result<(), String> {
    let mut components = Path::new(file).components();
    let plain = matches!(
        (components.next(), components.next()),
        (Some(Component::Normal(name)), None) if name == file
    );
    if plain && !file.contains('\\') {
        return Ok(());
    }
    Err(format!(
        "file={file} is not a plain file name: a record names a file in the plugin directory \
         (--plugins), without a directory, `..` or an absolute path"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::integrity::Pins;
    use crate::artifact::signature::SecretKey;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const SHA: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const OTHER: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn entry(file: &str, sha256: &str, signer: Option<PublicKey>) -> Entry {
        Entry {
            record: Record {
                id: "hello".to_string(),
                reference: "127.0.0.1:5000/plugins/hello:1.0".parse().expect("parses"),
                digest: DIGEST.to_string(),
                signer,
                file: file.to_string(),
            },
            sha256: sha256.to_string(),
        }
    }

    #[test]
    fn records_round_trip_and_other_lines_are_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("toolcell.lock");
        let plugins = dir.path().join("plugins");
        std::fs::write(&path, format!("# our pins\n{OTHER}  hand.lua\n")).expect("write");
        let key = SecretKey::generate().public();
        let mut lock = LockFile::read(&path).expect("reads");
        lock.set(entry("hello.wasm", SHA, Some(key)), &plugins)
            .expect("sets");
        lock.save().expect("saves");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.starts_with(&format!("# our pins\n{OTHER}  hand.lua\n#@ id=hello ")),
            "{text}"
        );
        // The record names the file in the plugin directory, the pin its path from
        // the lock file, as `sha256sum -c` reads it.
        assert!(text.contains(" file=hello.wasm\n"), "{text}");
        assert!(
            text.contains(&format!("\n{SHA}  plugins/hello.wasm\n")),
            "{text}"
        );
        let again = LockFile::read(&path).expect("reads again");
        assert_eq!(
            again.entries(&plugins).expect("entries"),
            vec![entry("hello.wasm", SHA, Some(key))]
        );
        // Installing the same file again replaces its lines.
        let mut again = again;
        again
            .set(
                entry("hello.wasm", OTHER, None),
                &dir.path().join("./plugins"),
            )
            .expect("sets");
        again.save().expect("saves");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.matches("#@").count(), 1, "{text}");
        assert!(!text.contains(SHA), "{text}");
        assert!(text.contains("signer=none"), "{text}");
    }

    #[test]
    fn the_pins_of_a_written_lock_load_as_before() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("toolcell.lock");
        std::fs::write(dir.path().join("hello.wasm"), "x").expect("write");
        let mut lock = LockFile::read(&path).expect("an absent lock is empty");
        lock.set(entry("hello.wasm", SHA, None), dir.path())
            .expect("sets");
        lock.save().expect("saves");
        let mut pins = Pins::default();
        pins.load_lock(&path).expect("--lock reads it");
        assert!(pins.check(&dir.path().join("hello.wasm"), SHA).is_ok());
        assert!(pins.check(&dir.path().join("hello.wasm"), OTHER).is_err());
    }

    #[test]
    fn a_bad_record_is_reported_with_its_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("bad.lock");
        std::fs::write(
            &path,
            format!("#@ id=x ref=a/b:1 digest=sha256:12 signer=none file=x.wasm\n{SHA}  x.wasm\n"),
        )
        .expect("write");
        let error = LockFile::read(&path).err().expect("refused").to_string();
        assert!(
            error.contains("bad.lock:1:") && error.contains("digest=sha256:12"),
            "{error}"
        );
        std::fs::write(
            &path,
            format!("#@ id=x ref=a/b:1 digest={DIGEST} signer=none file=x.wasm\n"),
        )
        .expect("write");
        let error = LockFile::read(&path)
            .expect("reads")
            .entries(dir.path())
            .expect_err("no pin")
            .to_string();
        assert!(error.contains("has no `SHA256  x.wasm` line"), "{error}");
    }

    #[test]
    fn a_record_names_a_plain_file_name_or_is_refused_with_its_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("team.lock");
        for file in [
            "../home/.bashrc",
            "/etc/passwd",
            "plugins/x.wasm",
            "./x.wasm",
            "..",
            ".",
            "x.wasm/",
            "a\\b.wasm",
        ] {
            std::fs::write(
                &path,
                format!("# team\n#@ id=x ref=a/b:1 digest={DIGEST} signer=none file={file}\n"),
            )
            .expect("write");
            let error = LockFile::read(&path).err().expect("refused").to_string();
            assert!(
                error.contains("team.lock:2: ")
                    && error.contains(&format!("file={file} is not a plain file name")),
                "{file}: {error}"
            );
        }
    }
}
