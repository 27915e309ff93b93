//! The debug log of clm(1): `ctx:log` and `print` append to one file (the command line
//! takes it from `CLM_DEBUG_LOG` or `TOOLCELL_DEBUG_LOG`). Without one the plugins are
//! told so at load time and never call the host for it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

/// An append-only debug log file shared by every plugin.
#[derive(Debug)]
pub struct DebugLog {
    file: Mutex<File>,
}

impl DebugLog {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(DebugLog {
            file: Mutex::new(file),
        })
    }

    /// Appends one line per line of `message`, each stamped with the time and plugin.
    pub fn write(&self, plugin: &str, message: &str) {
        let stamp = humantime::format_rfc3339_millis(SystemTime::now());
        let mut text = String::with_capacity(message.len() + 48);
        for line in message.lines() {
            text.push_str(&format!("{stamp} [{plugin}] {line}\n"));
        }
        if message.is_empty() {
            text.push_str(&format!("{stamp} [{plugin}] \n"));
        }
        if let Ok(mut file) = self.file.lock()
            && let Err(error) = file.write_all(text.as_bytes())
        {
            tracing::debug!("could not write the debug log: {error}");
        }
    }
}
