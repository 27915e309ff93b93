//! The file services a plugin imports (`read-file`, `write-file`) hold it to its grant:
//! read-only refuses writes, none refuses reads too, each saying who can grant more.

use std::sync::Arc;

use super::*;
use crate::sandbox::StoreState;
use crate::sandbox::wit::toolcell::plugin::host::Host;
use crate::services::files::{FileAccess, FileRoot};
use crate::services::trusted::TrustedPaths;

/// A store of plugin [`NAME`] granted `access` by the command line, over a root
/// holding `notes.txt`.
fn store(access: FileAccess) -> (tempfile::TempDir, StoreState) {
    let root = tempfile::TempDir::new().expect("temp dir");
    std::fs::write(root.path().join("notes.txt"), "original").expect("notes");
    let files = Files::Root(Arc::new(
        FileRoot::open(root.path(), &mut TrustedPaths::default()).expect("root"),
    ));
    let command_line = CommandLine {
        files: Some(access),
        ..CommandLine::default()
    };
    let context = context(Limits::default(), command_line, files);
    (root, StoreState::new(context))
}

/// How the policy's cut reads, for a plugin that asked for read-write.
fn cut(has: &str, allowed: FileAccess) -> String {
    format!(
        "plugin '{NAME}' {has}: the policy allows files = \"{allowed}\" (grant \"read-write\" \
         with --files read-write or [plugins.{NAME}.files] access = \"read-write\")"
    )
}

#[tokio::test]
async fn a_read_write_grant_reads_and_writes_under_the_root() {
    let (root, mut state) = store(FileAccess::ReadWrite);
    state
        .write_file("notes.txt".to_string(), b"new".to_vec())
        .await
        .expect("written");
    assert_eq!(
        state.read_file("notes.txt".to_string()).await,
        Ok(b"new".to_vec())
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).expect("notes"),
        "new"
    );
}

#[tokio::test]
async fn a_read_only_grant_reads_but_refuses_writes_and_says_who_can_grant_them() {
    let (root, mut state) = store(FileAccess::ReadOnly);
    assert_eq!(
        state.read_file("notes.txt".to_string()).await,
        Ok(b"original".to_vec())
    );

    assert_eq!(
        state
            .write_file("notes.txt".to_string(), b"changed".to_vec())
            .await,
        Err(format!(
            "cannot write notes.txt: {}",
            cut("may only read files", FileAccess::ReadOnly)
        ))
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).expect("notes"),
        "original"
    );
}

#[tokio::test]
async fn without_file_access_reads_are_refused_too() {
    let (_root, mut state) = store(FileAccess::None);
    assert_eq!(
        state.read_file("notes.txt".to_string()).await,
        Err(format!(
            "cannot read notes.txt: {}",
            cut("has no file access", FileAccess::None)
        ))
    );
}

#[tokio::test]
async fn without_a_root_every_access_fails_with_the_runtimes_reason() {
    let files = Files::Refused("no file root: --root is not set".into());
    let mut state = StoreState::new(context(Limits::default(), CommandLine::default(), files));
    assert_eq!(
        state.read_file("notes.txt".to_string()).await,
        Err("cannot read notes.txt: no file root: --root is not set".to_string())
    );
    assert_eq!(
        state.write_file("notes.txt".to_string(), Vec::new()).await,
        Err("cannot write notes.txt: no file root: --root is not set".to_string())
    );
}
