//! How many values each function of the plugin API returns (clm-tool(5), and the table
//! in docs/lua-api.md): the count matters wherever values are passed on whole, as in
//! `return clm.write_file(...)` in a task, whose one value is stored directly in the
//! outcome and several in an array.

use super::Fixture;
use toolcell_tests::http_server::TestServer;
use toolcell_tests::output;

/// Each line is a call and the number of values it returned (`select("#", ...)`).
const PLUGIN: &str = r##"
local function count(...) return select("#", ...) end
local lines = {}
local function check(name, n) lines[#lines + 1] = name .. " " .. n end

check("clm.tool_register", count(clm.tool_register("arity", { invoke = function(args, ctx)
  check("clm.write_file ok", count(clm.write_file("a.txt", "x")))
  check("clm.write_file failing", count(clm.write_file("missing/a.txt", "x")))
  check("clm.read_file ok", count(clm.read_file("a.txt")))
  check("clm.read_file failing", count(clm.read_file("missing.txt")))
  check("clm.sleep", count(clm.sleep(0)))
  check("clm.time", count(clm.time()))
  local ok_task = clm.spawn(function() return 1 end)
  check("clm.spawn", count(ok_task))
  check("task:result pending", count(ok_task:result()))
  check("task:wait", count(ok_task:wait()))
  check("task:result terminal", count(ok_task:result()))
  check("task:cancel", count(ok_task:cancel()))
  local idle = clm.spawn(function() clm.sleep(60000) end)
  check("clm.wait_any timing out", count(clm.wait_any({ idle }, 0)))
  check("clm.wait_any", count(clm.wait_any({ ok_task })))
  check("clm.await_all", count(clm.await_all({ ok_task })))
  check("clm.try_all ok", count(clm.try_all({ ok_task })))
  local failing = clm.spawn(function() error("no", 0) end)
  check("clm.try_all failing", count(clm.try_all({ failing, idle })))
  check("json.encode", count(json.encode({ 1 })))
  check("json.decode ok", count(json.decode("[1]")))
  check("json.decode null", count(json.decode("null")))
  check("json.decode failing", count(json.decode("[")))
  check("http.get ok", count(http.get(args.url)))
  check("http.get failing", count(http.get("http://10.0.0.1/")))
  check("http.post ok", count(http.post(args.url, "{}")))
  check("http.post failing", count(http.post("http://10.0.0.1/", "{}")))
  check("ctx:args_raw", count(ctx:args_raw()))
  check("ctx:log", count(ctx:log("x")))
  check("print", count(print("x")))
  check("warn", count(warn("x")))
  -- One value is stored directly in the outcome: `true`, not an array.
  local writer = clm.spawn(function() return clm.write_file("b.txt", "y") end)
  writer:wait()
  check("a task returning clm.write_file: " .. type(writer:result().value), 1)
  ctx:complete(table.concat(lines, "\n"))
end })))

clm.tool_register("complete_arity", { invoke = function(_, ctx)
  last_complete = count(ctx:complete("done"))
end })
clm.tool_register("fail_arity", { invoke = function(_, ctx)
  last_fail = count(ctx:fail("no"))
end })
clm.tool_register("report", { invoke = function(_, ctx)
  ctx:complete("ctx:complete " .. last_complete .. "\nctx:fail " .. last_fail)
end })
"##;

/// What the man page and docs/lua-api.md promise.
const EXPECTED: &str = "clm.write_file ok 1
clm.write_file failing 2
clm.read_file ok 1
clm.read_file failing 2
clm.sleep 0
clm.time 1
clm.spawn 1
task:result pending 1
task:wait 1
task:result terminal 1
task:cancel 1
clm.wait_any timing out 2
clm.wait_any 1
clm.await_all 1
clm.try_all ok 1
clm.try_all failing 2
json.encode 1
json.decode ok 1
json.decode null 1
json.decode failing 2
http.get ok 1
http.get failing 2
http.post ok 1
http.post failing 2
ctx:args_raw 1
ctx:log 0
print 0
warn 0
a task returning clm.write_file: boolean 1";

#[tokio::test]
async fn every_function_returns_as_many_values_as_documented() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[("arity.lua", PLUGIN)]);
    let runtime = fixture
        .load_with(|builder| builder.allow_http("127.0.0.1".parse().expect("grant")))
        .await;
    let args = serde_json::json!({ "url": server.url("/hello") }).to_string();
    let lines = output(&runtime, "arity", &args).await;
    // The load-time line comes first: clm.tool_register returns nothing.
    assert_eq!(lines, format!("clm.tool_register 0\n{EXPECTED}"));
    assert_eq!(output(&runtime, "complete_arity", "{}").await, "done");
    assert_eq!(
        toolcell_tests::failure(&runtime, "fail_arity", "{}").await,
        "no"
    );
    assert_eq!(
        output(&runtime, "report", "{}").await,
        "ctx:complete 0\nctx:fail 0"
    );
}
