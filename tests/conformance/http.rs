//! `http.get` / `http.post` of clm-tool(5) from real plugins against a real HTTP server
//! on 127.0.0.1: responses, limits (8 in flight per plugin, 128 per call), the address
//! policy, and cancellation that really drops the connection.

use std::time::{Duration, Instant};

use super::Fixture;
use toolcell::config::Config;
use toolcell::{CallOutcome, Runtime};
use toolcell_tests::http_server::TestServer;
use toolcell_tests::{assert_contains, failure, output};

const NOT_SERIAL: Duration = Duration::from_millis(550);
const CLOSE_SEEN: Duration = Duration::from_secs(5);

/// A plugin whose tools take URLs in their arguments.
const FETCHER: &str = r#"
local function fetch_body(url)
  local resp, err = http.get(url)
  if resp == nil then error(err) end
  return resp.body
end

-- The man page's example, unchanged but for where the URLs come from.
clm.tool_register("both", { invoke = function(args, ctx)
  local url_a, url_b = args.a, args.b
  local tasks = {
    clm.spawn(function() return fetch_body(url_a) end),
    clm.spawn(function() return fetch_body(url_b) end),
  }
  local outcomes = clm.await_all(tasks)
  for _, outcome in ipairs(outcomes) do
    if not outcome.ok then ctx:fail(outcome.error) return end
  end
  ctx:complete(outcomes[1].value .. outcomes[2].value)
end })

clm.tool_register("get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url, args.headers)
  if resp == nil then return ctx:complete("error: " .. err) end
  ctx:complete(resp.status .. " " .. resp.body)
end })

clm.tool_register("post", { invoke = function(args, ctx)
  local resp, err = http.post(args.url, args.body, args.headers)
  if resp == nil then return ctx:complete("error: " .. err) end
  ctx:complete(resp.body)
end })

clm.tool_register("flood", { invoke = function(args, ctx)
  local tasks = {}
  for i = 1, args.n do
    tasks[i] = clm.spawn(function()
      local resp, err = http.get(args.url)
      if resp == nil then error(err, 0) end
      return resp.status
    end)
  end
  local lines = {}
  for i, outcome in ipairs(clm.await_all(tasks)) do
    lines[i] = outcome.ok and tostring(outcome.value) or outcome.error
  end
  ctx:complete(table.concat(lines, "\n"))
end })

clm.tool_register("sequential", { invoke = function(args, ctx)
  for i = 1, args.n do
    local resp, err = http.get(args.url)
    if resp == nil then return ctx:complete(i .. ": " .. err) end
  end
  ctx:complete("all " .. args.n .. " done")
end })

clm.tool_register("abandon", { invoke = function(args, ctx)
  clm.spawn(function() http.get(args.url) end)
  clm.sleep(50)
  ctx:complete("returning with a live request")
end })

-- Long enough that the request reaches the server before the deadline, even on
-- a busy machine: the test needs a connection for the deadline to drop.
clm.tool_register("hang", { timeout_ms = 1500, invoke = function(args, ctx)
  http.get(args.url)
  ctx:complete("answered")
end })
"#;

async fn granted(fixture: &Fixture) -> Runtime {
    fixture
        .load_with(|builder| builder.allow_http("127.0.0.1".parse().expect("grant")))
        .await
}

fn url_args(url: &str) -> String {
    serde_json::json!({ "url": url }).to_string()
}

#[tokio::test]
async fn the_man_page_example_fetches_two_pages_at_the_same_time() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    let args =
        serde_json::json!({ "a": server.url("/slow?ms=300"), "b": server.url("/slow?ms=300") });
    let started = Instant::now();
    assert_eq!(
        output(&runtime, "both", &args.to_string()).await,
        "slow 300slow 300"
    );
    assert!(
        started.elapsed() < NOT_SERIAL,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(server.stats().max_in_flight, 2);
}

#[tokio::test]
async fn two_invocations_waiting_on_slow_responses_overlap() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    let args = url_args(&server.url("/slow?ms=300"));
    let started = Instant::now();
    let (a, b) = tokio::join!(
        runtime.call("get", &args).expect("a"),
        runtime.call("get", &args).expect("b")
    );
    assert!(
        started.elapsed() < NOT_SERIAL,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(a, CallOutcome::Completed("200 slow 300".into()));
    assert_eq!(b, CallOutcome::Completed("200 slow 300".into()));
}

#[tokio::test]
async fn responses_carry_status_and_body_and_requests_carry_headers() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    assert_eq!(
        output(&runtime, "get", &url_args(&server.url("/status?code=404"))).await,
        "404 status 404"
    );
    let echo = |body: &str, headers: serde_json::Value| {
        serde_json::json!({ "url": server.url("/echo"), "body": body, "headers": headers })
            .to_string()
    };
    let seeded: serde_json::Value = serde_json::from_str(
        &output(&runtime, "post", &echo("{\"a\":1}", serde_json::json!({}))).await,
    )
    .expect("json");
    assert_eq!(seeded["method"], "POST");
    assert_eq!(seeded["body"], "{\"a\":1}");
    assert_eq!(seeded["headers"]["content-type"], "application/json");
    let overridden: serde_json::Value = serde_json::from_str(
        &output(
            &runtime,
            "post",
            &echo(
                "plain",
                serde_json::json!({ "Content-Type": "text/plain", "X-Token": "t1" }),
            ),
        )
        .await,
    )
    .expect("json");
    assert_eq!(overridden["headers"]["content-type"], "text/plain");
    assert_eq!(overridden["headers"]["x-token"], "t1");
}

#[tokio::test]
async fn the_ninth_request_in_flight_fails_at_once() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    let args = serde_json::json!({ "url": server.url("/slow?ms=300"), "n": 9 });
    let lines = output(&runtime, "flood", &args.to_string()).await;
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines[..8], ["200"; 8]);
    assert_eq!(
        lines[8],
        "too many HTTP requests in flight: a plugin may have at most 8 at once"
    );
    assert_eq!(
        server.stats().requests,
        8,
        "the refused request never reached the server"
    );
}

#[tokio::test]
async fn the_129th_request_of_a_call_fails() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    let args = serde_json::json!({ "url": server.url("/hello"), "n": 129 }).to_string();
    assert_eq!(
        output(&runtime, "sequential", &args).await,
        "129: too many HTTP requests: a tool call may make at most 128"
    );
    // The budget is per call: the next call starts afresh.
    let args = serde_json::json!({ "url": server.url("/hello"), "n": 3 }).to_string();
    assert_eq!(output(&runtime, "sequential", &args).await, "all 3 done");
}

#[tokio::test]
async fn loopback_and_metadata_addresses_are_refused_without_a_grant() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = fixture.load().await;
    assert_eq!(
        output(&runtime, "get", &url_args(&server.url("/hello"))).await,
        "error: refused by policy: 127.0.0.1 is a loopback address (grant it with --allow-http 127.0.0.1)"
    );
    let by_name = output(
        &runtime,
        "get",
        &url_args(&format!("http://localhost:{}/hello", server.port())),
    )
    .await;
    assert_contains(
        &by_name,
        &[
            "error: refused by policy: localhost resolves to 127.0.0.1",
            "loopback",
        ],
    );
    let metadata = output(
        &runtime,
        "get",
        &url_args("http://169.254.169.254/latest/meta-data/"),
    )
    .await;
    assert_contains(
        &metadata,
        &["error: refused by policy", "169.254.169.254", "link-local"],
    );
    assert_eq!(server.stats().requests, 0);
}

#[tokio::test]
async fn a_redirect_to_a_refused_address_is_refused() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    let target = format!("http://localhost:{}/hello", server.port());
    let url = server.url(&format!("/redirect?to={target}"));
    let result = output(&runtime, "get", &url_args(&url)).await;
    assert_contains(
        &result,
        &[
            "error: refused by policy: redirect to",
            "localhost",
            "loopback",
        ],
    );
    assert_eq!(
        server.stats().requests,
        1,
        "only the redirecting request reached the server"
    );
}

#[tokio::test]
async fn a_port_grant_covers_only_that_port() {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let grant = format!("127.0.0.1:{}", server.port())
        .parse()
        .expect("grant");
    let runtime = fixture.load_with(|builder| builder.allow_http(grant)).await;
    assert_eq!(
        output(&runtime, "get", &url_args(&server.url("/hello"))).await,
        "200 hello"
    );
    assert_contains(
        &output(&runtime, "get", &url_args(&other.url("/hello"))).await,
        &["refused by policy"],
    );
}

#[tokio::test]
async fn the_config_file_grants_and_bounds_http_per_plugin() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let config = Config::parse(
        r#"
        [plugins.fetcher.http]
        allow = ["127.0.0.1"]
        timeout_ms = 200
        max_response_bytes = 1000
        "#,
    )
    .expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert_eq!(
        output(&runtime, "get", &url_args(&server.url("/hello"))).await,
        "200 hello"
    );
    assert_contains(
        &output(&runtime, "get", &url_args(&server.url("/never"))).await,
        &["error:", "timed out"],
    );
    assert_contains(
        &output(&runtime, "get", &url_args(&server.url("/big?bytes=5000"))).await,
        &["error:", "exceeds the 1000 bytes limit"],
    );
}

#[tokio::test]
async fn cancelling_a_call_drops_its_connections() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    let call = runtime
        .call("get", &url_args(&server.url("/never")))
        .expect("call");
    assert!(
        server.wait_for_in_flight(1, CLOSE_SEEN).await,
        "the request reached the server"
    );
    call.cancel("stop");
    assert_eq!(call.await, CallOutcome::Cancelled("cancelled: stop".into()));
    assert!(
        server.wait_for_client_closes(1, CLOSE_SEEN).await,
        "the server saw the connection closed"
    );
    assert_eq!(
        output(&runtime, "get", &url_args(&server.url("/hello"))).await,
        "200 hello"
    );
}

#[tokio::test]
async fn a_deadline_while_waiting_on_http_drops_the_connection() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    assert_eq!(
        failure(&runtime, "hang", &url_args(&server.url("/never"))).await,
        "tool 'hang' timed out after 1500 ms"
    );
    assert!(
        server.wait_for_client_closes(1, CLOSE_SEEN).await,
        "the server saw the connection closed: {:?}",
        server.stats()
    );
}

#[tokio::test]
async fn returning_with_a_live_request_cancels_it() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("fetcher.lua", FETCHER)]);
    let runtime = granted(&fixture).await;
    assert_contains(
        &failure(&runtime, "abandon", &url_args(&server.url("/never"))).await,
        &["still running; they were cancelled"],
    );
    assert!(
        server.wait_for_client_closes(1, CLOSE_SEEN).await,
        "the server saw the connection closed"
    );
}

#[tokio::test]
async fn bad_request_arguments_are_lua_errors() {
    let fixture = Fixture::new(&[(
        "bad.lua",
        r#"
        clm.tool_register("bad", { invoke = function(_, ctx)
          local a = select(2, pcall(http.get, 42))
          local b = select(2, pcall(http.get, "http://example.com/", { ["X"] = {} }))
          local c = select(2, pcall(http.post, "http://example.com/"))
          ctx:complete(a .. "\n" .. b .. "\n" .. c)
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    let text = output(&runtime, "bad", "{}").await;
    let lines: Vec<&str> = text.lines().collect();
    assert_contains(lines[0], &["http.get expects a URL string, got number"]);
    assert_contains(
        lines[1],
        &["headers must map strings to strings, got string = table"],
    );
    assert_contains(lines[2], &["http.post expects a body string, got nil"]);
}
