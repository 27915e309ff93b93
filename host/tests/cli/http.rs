//! `--allow-http`: loopback refused without a grant, granted hosts reached; the fetch
//! example.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::json;

use crate::support::*;

/// A one-shot HTTP server on 127.0.0.1: answers the first connection with a canned
/// `200 OK` and reports the request it read.
fn serve_once() -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test HTTP server");
    let port = listener.local_addr().expect("local address").port();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        while !request.windows(4).any(|window| window == b"\r\n\r\n") {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => request.extend_from_slice(&buffer[..read]),
            }
        }
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\
              Connection: close\r\n\r\ncanned-payload",
        );
        let _ = stream.flush();
        let _ = sender.send(String::from_utf8_lossy(&request).into_owned());
    });
    (port, receiver)
}

const FETCH_PLUGIN: &str = r#"
clm.tool_register("fetch", {
  invoke = function(args, ctx)
    local resp, err = http.get(args.url)
    if resp == nil then return ctx:fail(err) end
    ctx:complete(resp.status .. " " .. resp.body)
  end,
})
"#;

#[test]
fn http_to_loopback_is_refused_by_policy_without_a_grant() {
    let plugins = plugin_dir(&[("fetch.lua", FETCH_PLUGIN)]);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test HTTP server");
    let port = listener.local_addr().expect("local address").port();
    let url = format!("http://127.0.0.1:{port}/probe");
    let output = call(
        plugins.path(),
        "fetch",
        Some(&json!({ "url": url }).to_string()),
    );
    let message = output.failure();
    assert!(
        message.contains("refused by policy"),
        "the failure must say the policy refused it: {message}{output}"
    );
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        Err(error) => panic!("accept failed: {error}"),
        Ok(_) => panic!("a refused request must not connect to the server{output}"),
    }
}

#[test]
fn allow_http_grants_a_host_and_a_host_with_port() {
    let plugins = plugin_dir(&[("fetch.lua", FETCH_PLUGIN)]);
    for grant in ["127.0.0.1", "127.0.0.1:PORT"] {
        let (port, requests) = serve_once();
        let grant = grant.replace("PORT", &port.to_string());
        let url = format!("http://127.0.0.1:{port}/probe");
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--allow-http")
            .arg(&grant)
            .arg("fetch")
            .arg(json!({ "url": url }).to_string()));
        output.assert_completed("200 canned-payload");
        let request = requests
            .recv_timeout(Duration::from_secs(30))
            .expect("the server saw the request");
        assert!(
            request.starts_with("GET /probe "),
            "--allow-http {grant}: unexpected request {request:?}"
        );
    }
}

#[test]
fn the_fetch_example_reports_each_url_and_each_failure_on_its_own_line() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .join("examples/plugins");
    let (first, _) = serve_once();
    let (second, _) = serve_once();
    // A port nobody listens on: bind one, then let it go.
    let closed = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let urls = [
        format!("http://127.0.0.1:{first}/a"),
        format!("http://127.0.0.1:{closed}/b"),
        format!("http://127.0.0.1:{second}/c"),
    ];
    let output = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(&examples)
        .args(["--allow-http", "127.0.0.1"])
        .arg("fetch_all")
        .arg(json!({ "urls": urls }).to_string()));
    output.assert_completed(&format!(
        "{}: 200, 14 bytes\n{}: failed: connection failed: 127.0.0.1:{closed} refused the \
         connection\n{}: 200, 14 bytes",
        urls[0], urls[1], urls[2]
    ));
}
