//! `toolcell pull` (and so `install`) against a hand-written hostile registry on
//! 127.0.0.1: every response is bounded by size and time, and a layer is held to its
//! declared size and digest (issue 33, reproduction 3).
//!
//! The registry is a plain HTTP/1.1 server on a thread per connection, each
//! repository one way of lying: a manifest without end, one announced at 3 GiB, a
//! layer larger or smaller than declared, bodies trickled a byte at a time, an error
//! body and a token without end. It counts what it sent, so a test can tell that the
//! client stopped reading near its limit instead of reading on.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use toolcell::cache::sha256_hex;
use toolcell::distribution::{
    self, ArtifactRef, CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, RegistryOptions,
    Timeouts,
};

/// The real component bytes the lying layers are made of.
const LAYER_BYTES: usize = 1 << 20;

/// A chunk of what the endless bodies send.
static CHUNK: [u8; 64 * 1024] = [b' '; 64 * 1024];

/// The hostile registry: its address, and how many body bytes it has sent.
struct Registry {
    port: u16,
    sent: Arc<AtomicU64>,
}

impl Registry {
    fn start() -> Registry {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let sent = Arc::new(AtomicU64::new(0));
        let counter = sent.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let counter = counter.clone();
                std::thread::spawn(move || serve(stream, port, &counter));
            }
        });
        Registry { port, sent }
    }

    /// Pulls `repository:1` with `timeout` for small responses; returns the error and
    /// how long the pull took.
    fn pull(&self, repository: &str, timeout: Duration) -> (String, Duration) {
        let reference: ArtifactRef = format!("127.0.0.1:{}/{repository}:1", self.port)
            .parse()
            .expect("a reference");
        let options = RegistryOptions {
            plain_http: true,
            max_artifact_bytes: 8 << 20,
            timeouts: Timeouts {
                response: timeout,
                transfer: timeout,
            },
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let started = Instant::now();
        let result = runtime.block_on(distribution::pull(&reference, &options));
        let error = result.expect_err("the pull must fail").to_string();
        (error, started.elapsed())
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

/// The manifest of a plugin whose one layer declares `size` bytes of `digest`.
fn manifest(size: usize, digest: &str) -> String {
    let config = b"{}";
    serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {
            "mediaType": CONFIG_MEDIA_TYPE,
            "digest": format!("sha256:{}", sha256_hex(config)),
            "size": config.len(),
        },
        "layers": [{ "mediaType": LAYER_MEDIA_TYPE, "digest": digest, "size": size }],
    })
    .to_string()
}

fn layer() -> Vec<u8> {
    vec![7; LAYER_BYTES]
}

fn layer_digest() -> String {
    format!("sha256:{}", sha256_hex(&layer()))
}

/// Answers the requests of one connection.
fn serve(stream: TcpStream, port: u16, sent: &AtomicU64) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut authorized = false;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.to_ascii_lowercase().starts_with("authorization:") {
                authorized = true;
            }
            if header == "\r\n" {
                break;
            }
        }
        let repository = path.split('/').nth(2).unwrap_or("");
        let is_manifest = path.contains("/manifests/");
        let ok = |stream: &mut TcpStream, body: &[u8]| {
            respond(
                stream,
                "200 OK",
                &[],
                Some(body.len() as u64),
                sent,
                |out| out.write_all(body),
            )
        };
        let result = match (repository, is_manifest) {
            // A manifest that never ends (no length announced).
            ("endless", true) => respond(&mut stream, "200 OK", &[], None, sent, endless),
            // A manifest announced at 3 GiB.
            ("huge", true) => respond(&mut stream, "200 OK", &[], Some(3 << 30), sent, endless),
            // A layer declared at 10 bytes whose blob is 1 MiB.
            ("liar", true) => ok(&mut stream, manifest(10, &layer_digest()).as_bytes()),
            ("liar", false) => respond(&mut stream, "200 OK", &[], None, sent, |out| {
                out.write_all(&layer())
            }),
            // A layer declared at 1 MiB whose blob ends after 10 bytes.
            ("short", true) => ok(
                &mut stream,
                manifest(LAYER_BYTES, &layer_digest()).as_bytes(),
            ),
            ("short", false) => ok(&mut stream, &layer()[..10]),
            // The right size, other bytes.
            ("forged", true) => ok(
                &mut stream,
                manifest(LAYER_BYTES, &layer_digest()).as_bytes(),
            ),
            ("forged", false) => ok(&mut stream, &vec![8; LAYER_BYTES]),
            // A manifest trickled a byte every 100 ms.
            ("slow", true) => respond(&mut stream, "200 OK", &[], Some(1 << 20), sent, trickle),
            // A layer trickled the same way.
            ("slowblob", true) => ok(
                &mut stream,
                manifest(LAYER_BYTES, &layer_digest()).as_bytes(),
            ),
            ("slowblob", false) => respond(
                &mut stream,
                "200 OK",
                &[],
                Some(LAYER_BYTES as u64),
                sent,
                trickle,
            ),
            // An error whose body never ends.
            ("error", _) => respond(&mut stream, "404 Not Found", &[], None, sent, endless),
            // A token challenge whose token never ends.
            ("token", _) if !path.starts_with("/token") && !authorized => {
                let challenge = format!(
                    "www-authenticate: Bearer realm=\"http://127.0.0.1:{port}/token\",service=\"hostile\""
                );
                respond(
                    &mut stream,
                    "401 Unauthorized",
                    &[&challenge],
                    Some(0),
                    sent,
                    |_| Ok(()),
                )
            }
            _ if path.starts_with("/token") => {
                respond(&mut stream, "200 OK", &[], None, sent, endless)
            }
            _ => respond(&mut stream, "404 Not Found", &[], Some(0), sent, |_| Ok(())),
        };
        if result.is_err() {
            return;
        }
    }
}

/// Writes a response head and its body (`write`); with no `length`, the body is
/// chunked.
fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[&str],
    length: Option<u64>,
    sent: &AtomicU64,
    write: impl FnOnce(&mut Body) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-type: application/octet-stream\r\n");
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    match length {
        Some(length) => head.push_str(&format!("content-length: {length}\r\n\r\n")),
        None => head.push_str("transfer-encoding: chunked\r\n\r\n"),
    }
    stream.write_all(head.as_bytes())?;
    let mut body = Body {
        stream,
        chunked: length.is_none(),
        sent,
    };
    write(&mut body)?;
    if body.chunked {
        body.stream.write_all(b"0\r\n\r\n")?;
    }
    body.stream.flush()
}

/// A response body being written, counted.
struct Body<'a> {
    stream: &'a mut TcpStream,
    chunked: bool,
    sent: &'a AtomicU64,
}

impl Write for Body<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.chunked {
            self.stream
                .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
            self.stream.write_all(bytes)?;
            self.stream.write_all(b"\r\n")?;
        } else {
            self.stream.write_all(bytes)?;
        }
        self.sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// Sends spaces until the client goes away (at most 4 GiB, a bound that only ends
/// a test that went wrong).
fn endless(out: &mut Body) -> std::io::Result<()> {
    for _ in 0..(4u64 << 30) / CHUNK.len() as u64 {
        out.write_all(&CHUNK)?;
    }
    Ok(())
}

/// Sends a byte every 100 ms, for at most a minute.
fn trickle(out: &mut Body) -> std::io::Result<()> {
    for _ in 0..600 {
        out.write_all(b" ")?;
        out.flush()?;
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// The client stopped reading near `limit`: what the registry sent is `limit` plus
/// what the sockets' buffers held, far from the gigabytes it had to send.
fn assert_stopped_near(registry: &Registry, limit: u64, error: &str) {
    // Give the writer a moment to see the closed connection.
    std::thread::sleep(Duration::from_millis(200));
    let sent = registry.sent();
    assert!(
        sent < limit + (16 << 20),
        "the client read on: {sent} bytes sent against a limit of {limit} ({error})"
    );
}

#[test]
fn an_endless_or_huge_manifest_is_refused_at_its_limit() {
    let registry = Registry::start();
    let (error, _) = registry.pull("endless", Duration::from_secs(30));
    assert!(
        error.ends_with("the manifest is larger than 4194304 bytes"),
        "{error}"
    );
    assert_stopped_near(&registry, 4 << 20, &error);
    let before = registry.sent();
    let (error, took) = registry.pull("huge", Duration::from_secs(30));
    assert!(
        error.ends_with("the manifest is larger than 4194304 bytes"),
        "{error}"
    );
    assert!(
        took < Duration::from_secs(5),
        "refused from its length: {took:?}"
    );
    assert!(registry.sent() - before < 16 << 20, "{}", registry.sent());
}

#[test]
fn a_layer_is_held_to_its_declared_size_and_digest() {
    let registry = Registry::start();
    let (error, _) = registry.pull("liar", Duration::from_secs(30));
    assert!(
        error.ends_with("the component is larger than the 10 bytes its manifest declares"),
        "{error}"
    );
    let (error, _) = registry.pull("short", Duration::from_secs(30));
    assert!(
        error.ends_with("the component ended after 10 bytes; its manifest declares 1048576"),
        "{error}"
    );
    let (error, _) = registry.pull("forged", Duration::from_secs(30));
    assert!(
        error.contains("the component's digest is sha256:")
            && error.ends_with(&format!("but the manifest says {}", layer_digest())),
        "{error}"
    );
}

#[test]
fn trickled_bodies_end_at_their_deadline() {
    let registry = Registry::start();
    for (repository, what) in [("slow", "the manifest"), ("slowblob", "the component")] {
        let (error, took) = registry.pull(repository, Duration::from_secs(2));
        assert!(
            error.ends_with(&format!("{what} did not arrive whole within 2 s")),
            "{error}"
        );
        assert!(
            took < Duration::from_secs(10),
            "{repository}: the deadline holds: {took:?}"
        );
    }
}

#[test]
fn error_bodies_and_tokens_are_bounded_too() {
    let registry = Registry::start();
    let (error, took) = registry.pull("error", Duration::from_secs(30));
    assert!(
        error.contains("the registry answered 404 Not Found") && error.len() < 1024,
        "{error}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_stopped_near(&registry, 64 << 10, &error);
    let before = registry.sent();
    let (error, _) = registry.pull("token", Duration::from_secs(30));
    assert!(
        error.ends_with("the registry's token is larger than 65536 bytes"),
        "{error}"
    );
    assert!(registry.sent() - before < 16 << 20, "{}", registry.sent());
}
