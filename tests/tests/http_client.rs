//! Real requests through `PluginHttp` to the test HTTP server on 127.0.0.1: success,
//! statuses, headers, bodies, the address policy (grants, loopback, redirects,
//! metadata address), limits (redirects, body size, timeouts) and cancellation.
//!
//! Timing bounds only catch hangs; they are generous on purpose.

use std::future::Future;
use std::time::{Duration, Instant};

use toolcell::http::{
    HostGrant, HttpError, HttpPolicy, HttpSettings, PluginHttp, Request, Response,
};

use toolcell_tests::http_server::TestServer;

/// Generous bound for anything that should be quick.
const QUICK: Duration = Duration::from_secs(10);

fn grants(list: &[&str]) -> Vec<HostGrant> {
    list.iter()
        .map(|text| {
            text.parse()
                .unwrap_or_else(|e| panic!("grant {text:?}: {e}"))
        })
        .collect()
}

fn client_with(list: &[&str], allow_public: bool, settings: HttpSettings) -> PluginHttp {
    PluginHttp::new(HttpPolicy::new(grants(list), allow_public), settings).expect("client builds")
}

fn client(list: &[&str], allow_public: bool) -> PluginHttp {
    client_with(list, allow_public, HttpSettings::default())
}

/// Runs `fut`, failing the test if it takes longer than `QUICK`.
async fn quick<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(QUICK, fut)
        .await
        .expect("finished in time")
}

async fn ok(http: &PluginHttp, request: Request) -> Response {
    let url = request.url.clone();
    match quick(http.fetch(request)).await {
        Ok(response) => response,
        Err(e) => panic!("{url}: {e}"),
    }
}

async fn err(http: &PluginHttp, request: Request) -> HttpError {
    let url = request.url.clone();
    match quick(http.fetch(request)).await {
        Ok(response) => panic!("{url} should fail, got status {}", response.status),
        Err(e) => e,
    }
}

async fn refused(http: &PluginHttp, url: &str) -> String {
    match err(http, Request::get(url)).await {
        e @ HttpError::Policy(_) => e.to_string(),
        other => panic!("{url}: expected a policy refusal, got {other:?}"),
    }
}

/// Whether `message` is `prefix` and the refusal of localhost for resolving to a
/// loopback address (127.0.0.1, or ::1 where the hosts file lists it first).
fn is_localhost_refusal(message: &str, prefix: &str) -> bool {
    let hint = ", a loopback address (grant it with --allow-http localhost)";
    ["127.0.0.1", "::1"]
        .iter()
        .any(|ip| message == format!("{prefix}localhost resolves to {ip}{hint}"))
}

fn json(response: &Response) -> serde_json::Value {
    serde_json::from_slice(&response.body).expect("echo returns JSON")
}

// ---------------------------------------------------------------- success

#[tokio::test]
async fn get_returns_status_headers_and_body() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    assert_eq!(
        server.url("/hello"),
        format!("http://{}/hello", server.addr())
    );
    let response = ok(&http, Request::get(server.url("/hello"))).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"hello");
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(
        response
            .headers
            .iter()
            .all(|(name, _)| name == &name.to_ascii_lowercase())
    );
}

#[tokio::test]
async fn error_statuses_are_responses() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    for code in [201u16, 400, 404, 418, 500, 503] {
        let response = ok(
            &http,
            Request::get(server.url(&format!("/status?code={code}"))),
        )
        .await;
        assert_eq!(response.status, code);
        assert_eq!(response.body, format!("status {code}").as_bytes());
    }
    let response = ok(&http, Request::get(server.url("/status?code=204"))).await;
    assert_eq!((response.status, response.body.len()), (204, 0));
}

#[tokio::test]
async fn headers_go_both_ways() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    let request = Request::get(server.url("/echo"))
        .with_header("X-Test", "abc")
        .with_header("X-Multi", "one")
        .with_header("x-multi", "two")
        .with_header("Authorization", "Bearer secret");
    let response = ok(&http, request).await;
    let echo = json(&response);
    assert_eq!(echo["method"], "GET");
    assert_eq!(echo["headers"]["x-test"], "abc");
    assert_eq!(echo["headers"]["x-multi"], "one, two");
    assert_eq!(echo["headers"]["authorization"], "Bearer secret");
    let agent = echo["headers"]["user-agent"]
        .as_str()
        .expect("a user agent is sent");
    assert!(agent.starts_with("toolcell/"), "{agent}");
    // Response header names arrive lower case, values as sent.
    assert_eq!(response.header("x-echo"), Some("Yes"));
    assert!(
        response
            .headers
            .iter()
            .any(|(n, v)| n == "x-echo" && v == "Yes")
    );
    assert_eq!(response.header("content-type"), Some("application/json"));

    let custom = Request::get(server.url("/echo")).with_header("User-Agent", "my-plugin/1.0");
    assert_eq!(
        json(&ok(&http, custom).await)["headers"]["user-agent"],
        "my-plugin/1.0"
    );
}

#[tokio::test]
async fn post_sends_the_body_as_given() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    let request = Request::post(server.url("/echo?x=1"), r#"{"a": [1, 2]}"#)
        .with_header("Content-Type", "application/json");
    let echo = json(&ok(&http, request).await);
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["query"], "x=1");
    assert_eq!(echo["body"], r#"{"a": [1, 2]}"#);
    assert_eq!(echo["headers"]["content-type"], "application/json");
    assert_eq!(echo["headers"]["content-length"], "13");
}

#[tokio::test]
async fn connections_are_reused_within_a_plugin() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    for _ in 0..3 {
        ok(&http, Request::get(server.url("/hello"))).await;
    }
    assert_eq!(server.stats().requests, 3);
    assert_eq!(server.stats().connections, 1);
}

#[tokio::test]
async fn concurrent_requests_run_concurrently() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    ok(&http, Request::get(server.url("/hello"))).await;
    server.reset_max_in_flight();
    assert_eq!(server.stats().max_in_flight, 0);
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let http = http.clone();
            let url = server.url("/slow?ms=300");
            tokio::spawn(async move { http.fetch(Request::get(url)).await })
        })
        .collect();
    for task in tasks {
        let response = quick(task)
            .await
            .expect("task ran")
            .expect("fetch succeeded");
        assert_eq!(response.body, b"slow 300");
    }
    // All five were at the server at once: the client does not serialize them.
    assert_eq!(server.stats().max_in_flight, 5);
}

// ----------------------------------------------------------------- policy

#[tokio::test]
async fn loopback_literal_is_refused_without_a_grant() {
    let server = TestServer::start().await;
    let http = client(&[], true);
    let message = refused(&http, &server.url("/hello")).await;
    assert_eq!(
        message,
        "refused by policy: 127.0.0.1 is a loopback address (grant it with --allow-http 127.0.0.1)"
    );
    let other_spelling = format!("http://0x7f.1:{}/hello", server.port());
    assert!(
        refused(&http, &other_spelling)
            .await
            .contains("127.0.0.1 is a loopback address")
    );
    let mapped = format!("http://[::ffff:127.0.0.1]:{}/hello", server.port());
    assert!(
        refused(&http, &mapped)
            .await
            .contains("is a loopback address")
    );
    assert_eq!(server.stats().requests, 0);
    assert_eq!(server.stats().connections, 0);
}

#[tokio::test]
async fn localhost_is_refused_after_resolving() {
    let server = TestServer::start().await;
    let http = client(&[], true);
    let message = refused(&http, &format!("http://localhost:{}/hello", server.port())).await;
    assert!(
        is_localhost_refusal(&message, "refused by policy: "),
        "{message}"
    );
    assert_eq!(server.stats().connections, 0);
}

#[tokio::test]
async fn nothing_is_reachable_without_grants_or_public_access() {
    let server = TestServer::start().await;
    let http = client(&[], false);
    assert_eq!(
        refused(&http, &format!("http://localhost:{}/hello", server.port())).await,
        "refused by policy: localhost is not among this plugin's HTTP grants \
         (grant it with --allow-http localhost)"
    );
    assert_eq!(server.stats().connections, 0);
}

#[tokio::test]
async fn loopback_is_allowed_when_granted() {
    let server = TestServer::start().await;
    let port = server.port();
    for grant in ["127.0.0.1".to_owned(), format!("127.0.0.1:{port}")] {
        for allow_public in [false, true] {
            let http = client(&[&grant], allow_public);
            assert_eq!(
                ok(&http, Request::get(server.url("/hello"))).await.body,
                b"hello",
                "{grant}"
            );
        }
    }
    for grant in ["localhost".to_owned(), format!("localhost:{port}")] {
        let http = client(&[&grant], false);
        let url = format!("http://localhost:{port}/hello");
        assert_eq!(ok(&http, Request::get(url)).await.body, b"hello", "{grant}");
    }
}

#[tokio::test]
async fn a_grant_for_another_port_does_not_apply() {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    let grant = format!("127.0.0.1:{}", other.port());
    let message = refused(&client(&[&grant], false), &server.url("/hello")).await;
    assert!(
        message.contains("127.0.0.1 is not among this plugin's HTTP grants"),
        "{message}"
    );
    let message = refused(&client(&[&grant], true), &server.url("/hello")).await;
    assert!(
        message.contains("127.0.0.1 is a loopback address"),
        "{message}"
    );
    assert_eq!(server.stats().connections, 0);
}

#[tokio::test]
async fn a_name_granted_on_one_port_is_public_only_on_others() {
    // localhost:A is granted; localhost:B is not, so with public access it may only
    // use public addresses, and localhost has none.
    let granted = TestServer::start().await;
    let other = TestServer::start().await;
    let http = client(&[&format!("localhost:{}", granted.port())], true);
    let url = format!("http://localhost:{}/hello", granted.port());
    assert_eq!(ok(&http, Request::get(url)).await.body, b"hello");
    let message = refused(&http, &format!("http://localhost:{}/hello", other.port())).await;
    assert!(
        is_localhost_refusal(&message, "refused by policy: "),
        "{message}"
    );
    assert_eq!(other.stats().connections, 0);
}

#[tokio::test]
async fn a_redirect_to_a_loopback_host_that_is_not_granted_is_refused() {
    let granted = TestServer::start().await;
    let target = TestServer::start().await;
    let to = format!("http://localhost:{}/hello", target.port());
    let start = granted.url(&format!("/redirect?to={to}"));

    let message = refused(&client(&["127.0.0.1"], true), &start).await;
    assert!(
        is_localhost_refusal(&message, &format!("refused by policy: redirect to {to}: ")),
        "{message}"
    );
    let message = refused(&client(&["127.0.0.1"], false), &start).await;
    assert!(
        message.contains("localhost is not among this plugin's HTTP grants"),
        "{message}"
    );
    assert_eq!(target.stats().connections, 0);
    assert_eq!(granted.stats().requests, 2);

    // Granting the target too lets the redirect through.
    let http = client(&["127.0.0.1", "localhost"], false);
    assert_eq!(ok(&http, Request::get(&start)).await.body, b"hello");
}

#[tokio::test]
async fn the_metadata_address_is_refused_before_connecting() {
    let server = TestServer::start().await;
    let policies = [
        client(&[], true),
        client(&["127.0.0.1"], true),
        client(&["example.com"], false),
    ];
    for http in &policies {
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:169.254.169.254]/latest/meta-data/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://0xa9fea9fe/",
        ] {
            let started = Instant::now();
            let message = refused(http, url).await;
            assert!(
                message.contains("169.254.169.254") || message.contains("a9fe"),
                "{message}"
            );
            // Refused by the check, not by a connection attempt (which would take
            // up to the 10 s connect timeout).
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "{url}: {:?}",
                started.elapsed()
            );
        }
    }
    // Also when a granted host redirects there.
    let http = client(&["127.0.0.1"], true);
    let message = refused(
        &http,
        &server.url("/redirect?to=http://169.254.169.254/latest/meta-data/"),
    )
    .await;
    assert!(
        message.contains("169.254.169.254 is a link-local address"),
        "{message}"
    );
}

#[tokio::test]
async fn only_http_and_https() {
    let http = client(&[], true);
    for url in [
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://x/",
        "not a url",
    ] {
        assert!(
            matches!(
                err(&http, Request::get(url)).await,
                HttpError::InvalidRequest(_)
            ),
            "{url}"
        );
    }
    // A redirect to another scheme is not followed.
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    match err(
        &http,
        Request::get(server.url("/redirect?to=file:///etc/passwd")),
    )
    .await
    {
        e @ HttpError::Redirect(_) => assert!(
            e.to_string().contains("redirected to file:///etc/passwd: only http and https URLs are supported, not file:"),
            "{e}"
        ),
        other => panic!("expected a redirect error, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_headers_are_refused_by_name() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    let cases = [
        ("bad name", "x", "\"bad name\" is not a valid header name"),
        (
            "X-Split",
            "a\r\nInjected: yes",
            "header \"x-split\" contains a control character",
        ),
        (
            "Content-Length",
            "0",
            "\"content-length\" is set by the host",
        ),
        (
            "Transfer-Encoding",
            "chunked",
            "\"transfer-encoding\" is set by the host",
        ),
        ("Host", "internal.example", "\"host\" is set by the host"),
    ];
    for (name, value, needle) in cases {
        match err(
            &http,
            Request::get(server.url("/echo")).with_header(name, value),
        )
        .await
        {
            e @ HttpError::InvalidRequest(_) => assert!(e.to_string().contains(needle), "{e}"),
            other => panic!("{name}: expected an invalid request, got {other:?}"),
        }
    }
    assert_eq!(server.stats().requests, 0);
}

// -------------------------------------------------------------- redirects

#[tokio::test]
async fn redirects_are_followed_up_to_the_limit() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    let response = ok(&http, Request::get(server.url("/redirect-chain?n=5"))).await;
    assert_eq!(
        (response.status, response.body.as_slice()),
        (200, &b"chain done"[..])
    );

    match err(&http, Request::get(server.url("/redirect-chain?n=6"))).await {
        e @ HttpError::Redirect(_) => {
            assert!(
                e.to_string()
                    .starts_with("redirect failed: too many redirects (the limit is 5"),
                "{e}"
            )
        }
        other => panic!("expected a redirect error, got {other:?}"),
    }

    let strict = client_with(
        &["127.0.0.1"],
        false,
        HttpSettings {
            max_redirects: 0,
            ..HttpSettings::default()
        },
    );
    assert!(matches!(
        err(&strict, Request::get(server.url("/redirect-chain?n=1"))).await,
        HttpError::Redirect(_)
    ));
    assert_eq!(
        ok(&strict, Request::get(server.url("/redirect-chain?n=0")))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn redirects_change_methods_like_browsers() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    let post = |code: u16| {
        Request::post(
            server.url(&format!("/redirect?to=/echo&code={code}")),
            "payload",
        )
        .with_header("Content-Type", "text/plain")
    };
    for code in [301, 302, 303] {
        let echo = json(&ok(&http, post(code)).await);
        assert_eq!(
            (echo["method"].as_str(), echo["body"].as_str()),
            (Some("GET"), Some("")),
            "{code}"
        );
        assert!(echo["headers"].get("content-type").is_none(), "{code}");
    }
    for code in [307, 308] {
        let echo = json(&ok(&http, post(code)).await);
        assert_eq!(
            (echo["method"].as_str(), echo["body"].as_str()),
            (Some("POST"), Some("payload")),
            "{code}"
        );
        assert_eq!(echo["headers"]["content-type"], "text/plain");
    }
}

#[tokio::test]
async fn credentials_do_not_follow_a_redirect_to_another_origin() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1", "localhost"], false);
    let same =
        Request::get(server.url("/redirect?to=/echo")).with_header("Authorization", "Bearer t");
    assert_eq!(
        json(&ok(&http, same).await)["headers"]["authorization"],
        "Bearer t"
    );
    let other = format!("http://localhost:{}/echo", server.port());
    let cross = Request::get(server.url(&format!("/redirect?to={other}")))
        .with_header("Authorization", "Bearer t")
        .with_header("Cookie", "session=1")
        .with_header("X-Keep", "yes");
    let echo = json(&ok(&http, cross).await);
    assert!(echo["headers"].get("authorization").is_none());
    assert!(echo["headers"].get("cookie").is_none());
    assert_eq!(echo["headers"]["x-keep"], "yes");
}

#[tokio::test]
async fn a_redirect_without_location_is_returned_as_is() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    let response = ok(&http, Request::get(server.url("/status?code=302"))).await;
    assert_eq!(response.status, 302);
}

// ----------------------------------------------------------------- limits

#[tokio::test]
async fn bodies_up_to_the_limit_are_read_whole() {
    let server = TestServer::start().await;
    let http = client_with(
        &["127.0.0.1"],
        false,
        HttpSettings {
            max_response_bytes: 1000,
            ..HttpSettings::default()
        },
    );
    for path in ["/big?bytes=1000", "/big-chunked?bytes=1000", "/big?bytes=0"] {
        let response = ok(&http, Request::get(server.url(path))).await;
        assert!(response.body.iter().all(|b| *b == b'x'), "{path}");
        assert_eq!(
            response.body.len(),
            path.trim_start_matches(|c: char| !c.is_ascii_digit())
                .parse::<usize>()
                .unwrap_or(0)
        );
    }
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused() {
    let server = TestServer::start().await;
    let http = client_with(
        &["127.0.0.1"],
        false,
        HttpSettings {
            max_response_bytes: 1000,
            ..HttpSettings::default()
        },
    );
    // One byte over, and absurdly large: refused on Content-Length without reading,
    // or as soon as the streamed body passes the limit.
    for path in [
        "/big?bytes=1001",
        "/big-chunked?bytes=1001",
        "/big?bytes=1000000000000",
        "/big-chunked?bytes=1000000000000",
    ] {
        let started = Instant::now();
        match err(&http, Request::get(server.url(path))).await {
            HttpError::TooLarge { limit } => assert_eq!(limit, 1000),
            other => panic!("{path}: expected too large, got {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{path}: {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn the_default_limit_is_4_mib() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    let exact = ok(
        &http,
        Request::get(server.url("/big-chunked?bytes=4194304")),
    )
    .await;
    assert_eq!(exact.body.len(), 4 * 1024 * 1024);
    for path in ["/big?bytes=4194305", "/big-chunked?bytes=4194305"] {
        let e = err(&http, Request::get(server.url(path))).await;
        assert_eq!(
            e.to_string(),
            "response body exceeds the 4 MiB limit",
            "{path}"
        );
    }
}

#[tokio::test]
async fn the_request_timeout_covers_waiting_and_the_body() {
    let server = TestServer::start().await;
    let http = client_with(
        &["127.0.0.1"],
        false,
        HttpSettings {
            timeout: Duration::from_millis(300),
            ..HttpSettings::default()
        },
    );
    for path in [
        "/never",
        "/slow?ms=5000",
        "/trickle?chunks=50&interval_ms=100",
    ] {
        let started = Instant::now();
        match err(&http, Request::get(server.url(path))).await {
            e @ HttpError::Timeout(_) => assert_eq!(
                e.to_string(),
                format!(
                    "timed out: no complete response from 127.0.0.1:{} within 300 ms (the request timeout)",
                    server.port()
                )
            ),
            other => panic!("{path}: expected a timeout, got {other:?}"),
        }
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{path}: {:?}",
            started.elapsed()
        );
    }
    // The abandoned requests' connections were closed.
    assert!(
        server.wait_for_client_closes(2, QUICK).await,
        "{:?}",
        server.stats()
    );
    assert!(
        server.wait_until(QUICK, |s| s.in_flight == 0).await,
        "{:?}",
        server.stats()
    );
    // A trickle that fits in the time completes.
    let response = ok(
        &http,
        Request::get(server.url("/trickle?chunks=3&interval_ms=20")),
    )
    .await;
    assert_eq!(response.body, b"chunk 0\nchunk 1\nchunk 2\n");
}

// ----------------------------------------------------------- cancellation

#[tokio::test]
async fn dropping_the_fetch_closes_the_connection() {
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    for (i, path) in ["/never", "/slow?ms=60000"].into_iter().enumerate() {
        let fetch = http.fetch(Request::get(server.url(path)));
        tokio::select! {
            result = fetch => panic!("{path} answered: {result:?}"),
            arrived = server.wait_for_in_flight(1, QUICK) => assert!(arrived, "{path} never arrived"),
        }
        // `fetch` was dropped by select!: the server must see the connection close.
        assert!(
            server.wait_for_client_closes(i as u64 + 1, QUICK).await,
            "{path}: {:?}",
            server.stats()
        );
        assert!(server.wait_until(QUICK, |s| s.in_flight == 0).await);
    }
}

#[test]
fn the_server_works_from_synchronous_tests() {
    let server = TestServer::start_blocking();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let http = client(&["127.0.0.1"], false);
    let response = runtime
        .block_on(http.fetch(Request::get(server.url("/hello"))))
        .expect("fetch");
    assert_eq!(response.body, b"hello");
    assert!(server.wait_until_blocking(QUICK, |s| s.requests == 1));
}

// ------------------------------------------------------- failure classes

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let http = client(&["127.0.0.1"], false);
    match err(&http, Request::get(format!("http://127.0.0.1:{port}/"))).await {
        e @ HttpError::Connect(_) => assert_eq!(
            e.to_string(),
            format!("connection failed: 127.0.0.1:{port} refused the connection")
        ),
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_tls_failure_is_a_tls_error() {
    // The test server speaks plain HTTP, so the TLS handshake cannot succeed.
    let server = TestServer::start().await;
    let http = client(&["127.0.0.1"], false);
    match err(
        &http,
        Request::get(format!("https://127.0.0.1:{}/hello", server.port())),
    )
    .await
    {
        e @ HttpError::Tls(_) => {
            assert!(
                e.to_string()
                    .starts_with(&format!("TLS failed: 127.0.0.1:{}: ", server.port())),
                "{e}"
            )
        }
        other => panic!("expected a TLS error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_tls_error() {
    // A TLS server on 127.0.0.1 with a self-signed certificate: valid for the name,
    // but issued by nobody the system trusts.
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).expect("certificate");
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der());
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key.into())
        .expect("server config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        let Ok((mut tcp, _)) = listener.accept() else {
            return;
        };
        let _ = tcp.set_read_timeout(Some(QUICK));
        let Ok(mut tls) = rustls::ServerConnection::new(std::sync::Arc::new(config)) else {
            return;
        };
        while tls.is_handshaking() && tls.complete_io(&mut tcp).is_ok() {}
    });

    let http = client(&["127.0.0.1"], false);
    match err(&http, Request::get(format!("https://127.0.0.1:{port}/"))).await {
        e @ HttpError::Tls(_) => assert_eq!(
            e.to_string(),
            format!("TLS failed: 127.0.0.1:{port}: invalid peer certificate: UnknownIssuer")
        ),
        other => panic!("expected a TLS error, got {other:?}"),
    }
    server.join().expect("TLS server thread");
}

#[tokio::test]
async fn a_server_that_stops_sending_times_out_on_connect() {
    // A listener that never accepts, with a backlog of one: once the backlog is
    // full, further connection attempts get no answer and hit the connect timeout.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("addr"))
        .expect("bind");
    let port = socket.local_addr().expect("addr").port();
    let _listener = socket.listen(0).expect("listen");
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(Ok(stream)) = tokio::time::timeout(
            Duration::from_millis(200),
            tokio::net::TcpStream::connect(("127.0.0.1", port)),
        )
        .await
        {
            fillers.push(stream);
        }
    }
    let settings = HttpSettings {
        connect_timeout: Duration::from_millis(300),
        ..HttpSettings::default()
    };
    let http = client_with(&["127.0.0.1"], false, settings);
    match err(&http, Request::get(format!("http://127.0.0.1:{port}/"))).await {
        e @ HttpError::Timeout(_) => assert_eq!(
            e.to_string(),
            format!(
                "timed out: connecting to 127.0.0.1:{port} took longer than 300 ms (the connect timeout)"
            )
        ),
        other => panic!("expected a connect timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_name_is_a_dns_error() {
    let http = client(&[], true);
    match err(&http, Request::get("http://does-not-exist.invalid/")).await {
        e @ HttpError::Dns(_) => assert!(
            e.to_string()
                .starts_with("DNS lookup failed: does-not-exist.invalid"),
            "{e}"
        ),
        other => panic!("expected a DNS error, got {other:?}"),
    }
}
