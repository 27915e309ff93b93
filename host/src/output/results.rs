//! The result store: the whole output of every tool result the model saw cut (see
//! `output`), one file per call, so that the user (`toolcell result ID`), the embedding
//! application ([`crate::Runtime::result`]) or an agent with file access can read what
//! was cut. The store has a size cap; the oldest results go first. Making room and
//! writing happen under an exclusive lock on the store's [`LOCK_FILE`], so that calls
//! finishing at once, in one process or in several sharing the store, cannot together
//! keep more than the cap.
//!
//! A result's id is the runtime's run id and the call's id, `0a1b2c3d-17`: call ids
//! start again at 1 in every run, and runs share the store. A binary part of a result
//! of parts that the model did not get is kept beside it as `0a1b2c3d-17-3` (its
//! position in the result, from 1), in a file of its own bytes.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::SystemTime;

use crate::base::atomic_file::create_private_dir;
use crate::base::atomic_file::{Readers, write_atomically};
use crate::base::limits::{MIB, format_bytes};

/// The default [`ResultStore`] size cap.
pub const DEFAULT_MAX_BYTES: u64 = 100 * MIB;

/// The file name extension of a stored result's text.
const TEXT_EXTENSION: &str = "txt";
/// The file name extension of a stored part's bytes.
const PART_EXTENSION: &str = "bin";

/// The file in the store's directory whose lock is held while a result is put.
pub const LOCK_FILE: &str = ".lock";

/// Why a result could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// The id is not of the form the store gives out.
    #[error("'{0}' is not a result id (they look like 0a1b2c3d-17)")]
    BadId(String),
    /// No such result: never stored, or removed to make room.
    #[error("no result {id} in {}: it was never kept, or was removed to make room", dir.display())]
    NotFound { id: String, dir: PathBuf },
    /// The result is larger than the whole store may be.
    #[error("the output is {} and the result store holds at most {}", format_bytes(*bytes), format_bytes(*limit))]
    TooLarge { bytes: u64, limit: u64 },
    /// The runtime keeps no results; the text says why.
    #[error("no results are kept: {0}")]
    NoStore(String),
    /// The file system refused.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A directory of stored results, at most `max_bytes` in all.
#[derive(Debug, Clone)]
pub struct ResultStore {
    dir: PathBuf,
    max_bytes: u64,
}

impl ResultStore {
    /// The store in `dir` (created when the first result is kept), holding at most
    /// `max_bytes`.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        ResultStore {
            dir: dir.into(),
            max_bytes,
        }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of result `id`.
    pub fn path(&self, id: &str) -> Result<PathBuf, ResultError> {
        let extension = match parse_id(id) {
            Some(Id::Result) => TEXT_EXTENSION,
            Some(Id::Part) => PART_EXTENSION,
            None => return Err(ResultError::BadId(id.to_string())),
        };
        Ok(self.dir.join(format!("{id}.{extension}")))
    }

    /// Keeps `text` as result `id`, removing the oldest results while the store would
    /// exceed its cap; returns the file.
    pub fn put(&self, id: &str, text: &str) -> Result<PathBuf, ResultError> {
        self.put_bytes(id, text.as_bytes())
    }

    /// Keeps `data` as result `id` (a result's text, or one part's bytes), as
    /// [`ResultStore::put`] does.
    pub fn put_bytes(&self, id: &str, data: &[u8]) -> Result<PathBuf, ResultError> {
        let path = self.path(id)?;
        let bytes = data.len() as u64;
        if bytes > self.max_bytes {
            return Err(ResultError::TooLarge {
                bytes,
                limit: self.max_bytes,
            });
        }
        let io = |source| ResultError::Io {
            path: self.dir.clone(),
            source,
        };
        // Results may hold what a tool read for one user: only that user may read them.
        create_private_dir(&self.dir).map_err(io)?;
        let lock = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK_FILE))
            .map_err(io)?;
        // Released when `lock` is closed, at the end of this function.
        lock.lock().map_err(io)?;
        self.make_room(bytes).map_err(io)?;
        write_atomically(&path, data, Readers::Owner).map_err(|error| io(error.source))?;
        Ok(path)
    }

    /// The whole text of result `id`; a part that is not UTF-8 text is an
    /// [`ResultError::Io`] of kind `InvalidData` (read it with [`ResultStore::get_bytes`]).
    pub fn get(&self, id: &str) -> Result<String, ResultError> {
        let data = self.get_bytes(id)?;
        String::from_utf8(data).map_err(|error| ResultError::Io {
            path: self.dir.join(id),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, error.utf8_error()),
        })
    }

    /// The bytes of result `id`: a result's text, or one part's bytes.
    pub fn get_bytes(&self, id: &str) -> Result<Vec<u8>, ResultError> {
        let path = self.path(id)?;
        std::fs::read(&path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ResultError::NotFound {
                id: id.to_string(),
                dir: self.dir.clone(),
            },
            _ => ResultError::Io { path, source },
        })
    }

    /// Removes the oldest results until `incoming` more bytes fit under the cap.
    fn make_room(&self, incoming: u64) -> std::io::Result<()> {
        let mut results: Vec<(SystemTime, PathBuf, u64)> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.rsplit_once('.').is_some_and(|(id, extension)| {
                    [TEXT_EXTENSION, PART_EXTENSION].contains(&extension) && parse_id(id).is_some()
                })
            })
            .filter_map(|entry| {
                let metadata = entry.metadata().ok()?;
                let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                Some((modified, entry.path(), metadata.len()))
            })
            .collect();
        let mut total: u64 = results.iter().map(|(_, _, bytes)| bytes).sum();
        results.sort();
        for (_, path, bytes) in results {
            if total + incoming <= self.max_bytes {
                break;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => total -= bytes,
                // Another run removed it first.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => total -= bytes,
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// What an id names.
enum Id {
    /// A result's text: `HEX8-CALL`.
    Result,
    /// One part's bytes: `HEX8-CALL-PART`.
    Part,
}

/// What `id` names, when it is of a form the store gives out: the only names it reads,
/// so an id never names a path outside the store.
fn parse_id(id: &str) -> Option<Id> {
    let digits = |text: &str| {
        !text.is_empty() && text.len() <= 20 && text.bytes().all(|byte| byte.is_ascii_digit())
    };
    let (run, rest) = id.split_once('-')?;
    let run_ok = run.len() == 8
        && run
            .bytes()
            .all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase());
    if !run_ok {
        return None;
    }
    match rest.split_once('-') {
        None => digits(rest).then_some(Id::Result),
        Some((call, part)) => (digits(call) && digits(part)).then_some(Id::Part),
    }
}

/// A new run id: a random start drawn once per process, plus the runs this process
/// started before. The runtimes of one process never share an id (until 2^32 of them),
/// processes sharing a store rarely do, and a runtime costs no draw from the operating
/// system.
pub fn new_run() -> u32 {
    static START: OnceLock<u32> = OnceLock::new();
    static STARTED: AtomicU32 = AtomicU32::new(0);
    let start = *START.get_or_init(|| rand_core::RngCore::next_u32(&mut rand_core::OsRng));
    start.wrapping_add(STARTED.fetch_add(1, Ordering::Relaxed))
}

/// The id of one run's result for call `call`.
pub fn result_id(run: u32, call: u64) -> String {
    format!("{run:08x}-{call}")
}

/// The id of part `position` (from 1) of result `result`.
pub fn part_id(result: &str, position: usize) -> String {
    format!("{result}-{position}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_one_process_never_share_an_id() {
        let runs: std::collections::HashSet<u32> = (0..1000).map(|_| new_run()).collect();
        assert_eq!(runs.len(), 1000);
    }

    #[test]
    fn a_stored_result_reads_back_by_its_id() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = ResultStore::new(dir.path().join("results"), 1000);
        let path = store.put("0a1b2c3d-7", "the whole output").expect("stored");
        assert_eq!(path, dir.path().join("results/0a1b2c3d-7.txt"));
        assert_eq!(store.get("0a1b2c3d-7").expect("read"), "the whole output");
        assert!(matches!(
            store.get("0a1b2c3d-8"),
            Err(ResultError::NotFound { .. })
        ));
    }

    #[test]
    fn ids_never_name_other_paths() {
        let store = ResultStore::new("/results", 1000);
        for id in [
            "../x",
            "0a1b2c3d-",
            "0A1B2C3D-1",
            "0a1b2c3-1",
            "0a1b2c3d-1/..",
            "0a1b2c3d-1-",
            "0a1b2c3d-1-2-3",
            "0a1b2c3d--2",
            "",
        ] {
            assert!(matches!(store.get(id), Err(ResultError::BadId(_))), "{id}");
        }
    }

    #[test]
    fn a_part_is_kept_as_its_bytes_beside_the_results_text_and_counts_against_the_cap() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = ResultStore::new(dir.path(), 12);
        let png = [0x89, b'P', b'N', b'G', 0xff, 0x00];
        let path = store
            .put_bytes(&part_id("0a1b2c3d-7", 2), &png)
            .expect("stored");
        assert_eq!(path, dir.path().join("0a1b2c3d-7-2.bin"));
        assert_eq!(store.get_bytes("0a1b2c3d-7-2").expect("read"), png);
        assert!(
            matches!(store.get("0a1b2c3d-7-2"), Err(ResultError::Io { source, .. }) if source.kind() == std::io::ErrorKind::InvalidData),
            "a part that is not text is not read as text"
        );
        store.put("0a1b2c3d-8", "1234567").expect("stored");
        assert!(
            store.get_bytes("0a1b2c3d-7-2").is_err(),
            "the part made room: 6 + 7 bytes exceed the cap of 12"
        );
    }

    #[test]
    fn the_cap_holds_when_results_are_put_at_once() {
        // Issue 33: 16 calls finishing at once kept 1.8 MB against a cap of 1 MB.
        let dir = tempfile::tempdir().expect("temp dir");
        let cap = 100_000;
        let threads: Vec<_> = (0..16)
            .map(|thread| {
                let store = ResultStore::new(dir.path(), cap);
                std::thread::spawn(move || {
                    for call in 0..20 {
                        let id = format!("0000000{:x}-{call}", thread % 16);
                        store.put(&id, &"x".repeat(9_000)).expect("stored");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no panic");
        }
        let kept: u64 = std::fs::read_dir(dir.path())
            .expect("the store")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".txt"))
            .map(|entry| entry.metadata().expect("metadata").len())
            .sum();
        assert!(kept <= cap, "{kept} bytes kept against a cap of {cap}");
        assert!(
            kept >= cap - 9_000,
            "the store is used up to its cap: {kept}"
        );
    }

    #[test]
    fn the_oldest_results_make_room_and_a_result_over_the_cap_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = ResultStore::new(dir.path(), 25);
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        store.put("00000000-1", &"a".repeat(10)).expect("first");
        let file = std::fs::File::options()
            .write(true)
            .open(dir.path().join("00000000-1.txt"))
            .expect("open");
        file.set_modified(old).expect("age it");
        store.put("00000000-2", &"b".repeat(10)).expect("second");
        store.put("00000000-3", &"c".repeat(10)).expect("third");
        assert!(store.get("00000000-1").is_err(), "the oldest went first");
        assert_eq!(store.get("00000000-2").expect("kept"), "b".repeat(10));
        assert!(matches!(
            store.put("00000000-4", &"d".repeat(26)),
            Err(ResultError::TooLarge {
                bytes: 26,
                limit: 25
            })
        ));
    }
}
