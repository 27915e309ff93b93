//! Asking on the terminal whether a tool may run (`toolcell call`, when the permission
//! policy says `ask`): the question on stderr, the answer from stdin.

use std::io::{BufRead, Write};

use crate::policy::{Answer, PermissionPrompt};

/// The most of the arguments the question shows.
const SHOWN_ARGUMENTS: usize = 500;

/// Asks whether the call of `prompt` may run.
pub(super) async fn on_terminal(prompt: PermissionPrompt) -> Answer {
    let question = describe(&prompt);
    tokio::task::spawn_blocking(move || ask(&question))
        .await
        .unwrap_or(Answer::Deny { feedback: None })
}

/// The call in one line: the tool, what its plugin may do, the arguments.
fn describe(prompt: &PermissionPrompt) -> String {
    let grants = &prompt.plugin.grants;
    let mut arguments = prompt.arguments.to_string();
    if arguments.len() > SHOWN_ARGUMENTS {
        let mut end = SHOWN_ARGUMENTS;
        while !arguments.is_char_boundary(end) {
            end -= 1;
        }
        arguments.truncate(end);
        arguments.push_str("...");
    }
    format!(
        "toolcell: tool '{}' of plugin '{}' (files: {}, HTTP: {}) asks to run with {arguments}",
        prompt.tool.name,
        prompt.plugin.manifest.id,
        grants.files(),
        if grants.may_use_http() { "yes" } else { "no" },
    )
}

/// Asks until the answer is one of the choices; the end of input denies.
fn ask(question: &str) -> Answer {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut stderr = std::io::stderr();
    let _ = writeln!(stderr, "{question}");
    loop {
        let _ = write!(
            stderr,
            "Allow it? [y]es, this once / [a]lways, for this session / [n]o: "
        );
        let _ = stderr.flush();
        let Some(line) = read_line(&mut input) else {
            return Answer::Deny { feedback: None };
        };
        match line.to_ascii_lowercase().as_str() {
            "y" | "yes" => return Answer::AllowOnce,
            "a" | "always" => return Answer::AllowForSession,
            "n" | "no" => {
                let _ = write!(stderr, "Why? (optional; the model reads it): ");
                let _ = stderr.flush();
                let feedback = read_line(&mut input).filter(|text| !text.is_empty());
                return Answer::Deny { feedback };
            }
            _ => {}
        }
    }
}

/// One line without its end, or `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}
