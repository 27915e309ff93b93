//! What a finished `toolcell` run left behind, shown whole when an assertion fails.
//! Included by path (`#[path = "common/run.rs"] mod run;`) by the test crates that
//! need it and not through `common`, so crates that do not use it are not warned of
//! dead code.

use std::fmt;
use std::process::Output;

/// Exit code, stdout and stderr of a finished run.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "\n--- exit {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}
