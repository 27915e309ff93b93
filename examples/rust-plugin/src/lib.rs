//! An example toolcell plugin written in Rust with `toolcell-guest`: typed tools,
//! async handlers, HTTP, timers, tasks, files, config, a structured result, progress.
//!
//! Build: `cargo build -p toolcell-example-rust --target wasm32-wasip2 --release`;
//! the plugin is `target/wasm32-wasip2/release/toolcell_example_rust.wasm`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcell_guest::{ContentPart, Ctx, Error, Media, Plugin, Tool, UserAnswer};

/// Arguments of `rs_greet`.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// Arguments of `rs_fetch_both`.
#[derive(Deserialize, JsonSchema)]
struct FetchBoth {
    /// The first URL.
    a: String,
    /// The second URL, fetched at the same time.
    b: String,
}

/// Arguments of `rs_sleep`.
#[derive(Deserialize, JsonSchema)]
struct Sleep {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

/// Arguments of `rs_note_write`.
#[derive(Deserialize, JsonSchema)]
struct NoteWrite {
    /// The note's file, relative to the granted root.
    path: String,
    /// What to write.
    text: String,
}

/// Arguments of `rs_note_read`.
#[derive(Deserialize, JsonSchema)]
struct NoteRead {
    /// The note's file, relative to the granted root.
    path: String,
}

/// Arguments of `rs_count_words`.
#[derive(Deserialize, JsonSchema)]
struct CountWords {
    /// The text whose words are counted.
    text: String,
}

/// The structured result of `rs_count_words`.
#[derive(Serialize, JsonSchema)]
struct WordCount {
    /// How many words the text has.
    words: u32,
}

/// The configuration (`[tools.rust-example]`).
#[derive(Deserialize, Default)]
struct Config {
    greeting: Option<String>,
}

async fn greet(args: Greet, ctx: Ctx) -> Result<String, Error> {
    let config: Config = ctx.config()?.unwrap_or_default();
    let greeting = config.greeting.unwrap_or_else(|| "Hello".to_string());
    Ok(format!("{greeting}, {}!", args.name))
}

/// Fetches both URLs concurrently in two child tasks and reports each status and size.
async fn fetch_both(args: FetchBoth, ctx: Ctx) -> Result<String, Error> {
    let fetch = |url: String| {
        let ctx = ctx.clone();
        async move { ctx.http_get(&url).await }
    };
    let first = ctx.spawn(fetch(args.a));
    let second = ctx.spawn(fetch(args.b));
    let (first, second) = (first.await?, second.await?);
    Ok(format!(
        "{} {}; {} {}",
        first.status,
        first.text(),
        second.status,
        second.text()
    ))
}

async fn sleep(args: Sleep, ctx: Ctx) -> Result<String, Error> {
    ctx.sleep(Duration::from_millis(args.ms)).await?;
    Ok(format!("slept {} ms", args.ms))
}

async fn note_write(args: NoteWrite, ctx: Ctx) -> Result<String, Error> {
    ctx.write_file(&args.path, &args.text)?;
    Ok(format!("wrote {} bytes", args.text.len()))
}

async fn note_read(args: NoteRead, ctx: Ctx) -> Result<String, Error> {
    ctx.read_to_string(&args.path)
}

/// Counts the words, reporting progress after each one.
async fn count_words(args: CountWords, ctx: Ctx) -> Result<WordCount, Error> {
    let words: Vec<&str> = args.text.split_whitespace().collect();
    let total = words.len() as f64;
    for done in 1..=words.len() {
        ctx.progress(done as f64, Some(total), None)?;
    }
    Ok(WordCount {
        words: words.len() as u32,
    })
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// A result of parts: text and a picture.
async fn show(_args: Nothing, _ctx: Ctx) -> Result<Vec<ContentPart>, Error> {
    Ok(vec![
        ContentPart::Text("a picture:".to_string()),
        ContentPart::Image(Media {
            data: vec![0x89, 0x50, 0x4E, 0x47, 0xFF],
            mime_type: "image/png".to_string(),
        }),
    ])
}

/// Asks the user for a name.
async fn ask(_args: Nothing, ctx: Ctx) -> Result<String, Error> {
    let form = serde_json::json!({
        "type": "object",
        "properties": { "name": { "type": "string", "default": "nobody" } },
        "required": ["name"],
    });
    Ok(match ctx.ask("Who are you?", form).await? {
        UserAnswer::Accepted(answer) => {
            format!("hello {}", answer["name"].as_str().unwrap_or_default())
        }
        UserAnswer::Declined => "declined".to_string(),
        UserAnswer::Cancelled => "cancelled".to_string(),
    })
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("rs_greet", "Greets someone by name", greet))
        .tool(Tool::new(
            "rs_fetch_both",
            "Fetches two URLs at the same time",
            fetch_both,
        ))
        .tool(Tool::new("rs_sleep", "Sleeps, then says so", sleep).no_prompt())
        .tool(Tool::new("rs_note_write", "Writes a note", note_write))
        .tool(Tool::new("rs_note_read", "Reads a note", note_read).no_prompt())
        .tool(Tool::structured("rs_count_words", "Counts words", count_words).title("Count words"))
        .tool(Tool::content("rs_show", "Shows a picture", show).no_prompt())
        .tool(Tool::new("rs_ask", "Asks the user for a name", ask).no_prompt())
}

toolcell_guest::export!(plugin);
toolcell_guest::manifest!(include_str!("../toolcell.toml"));
