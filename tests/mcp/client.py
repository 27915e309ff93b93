"""Drives `toolcell serve` with the official MCP Python SDK (`pip install mcp`).

Run by host/tests/mcp.rs (so `cargo test` runs it), once per transport and protocol mode:

    python3 tests/mcp/client.py --toolcell BIN --transport stdio|http --mode legacy|auto

`legacy` starts the session with `initialize` (protocol versions up to 2025-11-25);
`auto` lets the SDK discover the newest version both sides speak (2026-07-28, where
list changes arrive on a `subscriptions/listen` stream). Each check prints `ok - NAME`;
the first failure raises, which exits non-zero with the reason.

The plugins are real Lua plugins in a temporary directory, served with `--watch`; the
cancellation check uses a real HTTP server on 127.0.0.1 that records when the plugin's
request arrives and when its connection is closed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError

# Bounds that only catch hangs.
HANG = 30.0

GREET = """
calls = 0
clm.tool_register("greet", {
  description = "Greet someone by name",
  params_schema = {
    type = "object",
    properties = { name = { type = "string", description = "who" } },
    required = { "name" },
  },
  invoke = function(args, ctx)
    calls = calls + 1
    print("greet was called")  -- the debug log, never the protocol channel
    ctx:complete("Hello, " .. args.name .. "!")
  end,
})
clm.tool_register("greet_count", {
  description = "How many times greet ran",
  invoke = function(_, ctx) ctx:complete(tostring(calls)) end,
})
clm.tool_register("fail", {
  description = "Always fails",
  invoke = function(_, ctx) ctx:fail("no luck") end,
})
clm.tool_register("secret", {
  description = "Hidden from models",
  hidden = true,
  invoke = function(_, ctx) ctx:complete("psst") end,
})
print("loaded greet.lua")
"""

WAIT = """
clm.tool_register("fetch", {
  description = "GET a URL and return the body",
  params_schema = { type = "object", properties = { url = { type = "string" } }, required = { "url" } },
  invoke = function(args, ctx)
    local resp, err = http.get(args.url)
    if not resp then return ctx:fail(err) end
    ctx:complete(resp.body)
  end,
})
clm.tool_register("nap", {
  description = "Sleep, then answer",
  params_schema = { type = "object", properties = { ms = { type = "integer" } }, required = { "ms" } },
  invoke = function(args, ctx)
    clm.sleep(args.ms)
    ctx:complete("rested")
  end,
})
"""

CHATTY = """
clm.tool_register("chatty", {
  description = "Logs three lines, then answers",
  invoke = function(_, ctx)
    ctx:log("started")
    clm.sleep(50)
    print("working")
    clm.sleep(50)
    warn("almost done")
    ctx:complete("chatted")
  end,
})
"""

ADDED_V1 = """
clm.tool_register("added", {
  description = "first version",
  invoke = function(_, ctx) ctx:complete("v1") end,
})
"""

ADDED_V2 = """
clm.tool_register("added", {
  description = "second version",
  invoke = function(_, ctx) ctx:complete("v2") end,
})
"""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def ok(name: str) -> None:
    print(f"ok - {name}", flush=True)


class NeverServer:
    """A real HTTP server on 127.0.0.1: `/never` is read and never answered; it records
    when such a request arrives and when the client closes its connection."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.closed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                outer.arrived.set()
                self.connection.settimeout(HANG)
                try:
                    while self.connection.recv(1024):
                        pass
                except OSError:
                    pass
                outer.closed.set()
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/never"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Notifications:
    """Tool-list changes and log lines as the client receives them, whatever the
    protocol version."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = anyio.Event()
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.logged = anyio.Event()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self.logged.set()

    async def wait_for_logs(self, count: int) -> None:
        with anyio.fail_after(HANG):
            while len(self.logs) < count:
                self.logged = anyio.Event()
                await self.logged.wait()

    def note(self) -> None:
        self.count += 1
        self.changed.set()

    async def handler(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.note()

    async def wait_for(self, count: int, what: str) -> None:
        with anyio.fail_after(HANG):
            while self.count < count:
                self.changed = anyio.Event()
                await self.changed.wait()
        check(self.count == count, f"expected {count} list changes after {what}, got {self.count}")


def text_of(result: types.CallToolResult) -> str:
    check(len(result.content) == 1, f"expected one content block, got {result.content!r}")
    block = result.content[0]
    check(isinstance(block, types.TextContent), f"expected text content, got {block!r}")
    return block.text


async def call(client: Client, tool: str, args: dict[str, Any], **kwargs: Any) -> types.CallToolResult:
    with anyio.fail_after(HANG):
        return await client.call_tool(tool, args, **kwargs)


async def tool_names(client: Client) -> dict[str, types.Tool]:
    with anyio.fail_after(HANG):
        listing = await client.list_tools(cache_mode="refresh")
    return {tool.name: tool for tool in listing.tools}


async def run_checks(client: Client, mode: str, plugins: Path, never: NeverServer, notes: Notifications) -> None:
    # initialize / discover
    check(client.server_info is not None and client.server_info.name == "toolcell",
          f"server info: {client.server_info!r}")
    tools_capability = client.server_capabilities.tools
    check(tools_capability is not None and tools_capability.list_changed is True,
          f"tools capability with listChanged under --watch: {client.server_capabilities!r}")
    if mode == "legacy":
        check(client.protocol_version < "2026-07-28", f"legacy protocol: {client.protocol_version}")
    else:
        check(client.protocol_version >= "2026-07-28", f"discovered protocol: {client.protocol_version}")
    ok(f"session opened ({client.protocol_version})")

    # tools/list
    tools = await tool_names(client)
    check(set(tools) == {"greet", "greet_count", "fail", "fetch", "nap", "chatty"},
          f"every tool that is not hidden, got {sorted(tools)}")
    greet = tools["greet"]
    check(greet.description == "Greet someone by name", f"description: {greet.description!r}")
    check(greet.input_schema == {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "who"}},
        "required": ["name"],
    }, f"input schema: {greet.input_schema!r}")
    check(tools["fail"].input_schema == {"type": "object", "properties": {}},
          f"a tool without a schema takes an object: {tools['fail'].input_schema!r}")
    ok("tools/list")

    # tools/call: success and failure
    result = await call(client, "greet", {"name": "MCP"})
    check(result.is_error is not True and text_of(result) == "Hello, MCP!", f"greet: {result!r}")
    result = await call(client, "fail", {})
    check(result.is_error is True and text_of(result) == "[tool failed: no luck]", f"fail: {result!r}")
    ok("tools/call success and failure")

    # validation: the plugin never runs
    result = await call(client, "greet", {"name": 5})
    check(result.is_error is True, f"a validation failure is a tool error: {result!r}")
    check(text_of(result) == "invalid arguments for 'greet': value at `/name` is not of type \"string\"",
          f"validation message: {text_of(result)!r}")
    result = await call(client, "greet", {})
    check(text_of(result) == "invalid arguments for 'greet': \"name\" is a required property",
          f"missing property: {text_of(result)!r}")
    result = await call(client, "greet_count", {})
    check(text_of(result) == "1", f"greet ran only for the valid call, count: {text_of(result)!r}")
    ok("validation failure never reaches the plugin")

    # an unknown tool is a protocol error; so is a hidden one, which is for plugin code
    for name, expected in [
        ("no_such_tool", "unknown tool 'no_such_tool'"),
        ("secret", "unknown tool 'secret'"),
        ("n" * 1000, "unknown tool '" + "n" * 64 + "…' (a name of 1000 characters)"),
    ]:
        try:
            await call(client, name, {})
        except MCPError as error:
            check(error.error.code == types.INVALID_PARAMS, f"unknown tool error code: {error.error!r}")
            check(expected in str(error) and "n" * 65 not in str(error), f"unknown tool error: {error}")
        else:
            raise AssertionError(f"calling {name[:20]} must fail")
    ok("unknown and hidden tools")

    # what a plugin logs during the call, at the level asked for
    if mode == "legacy":
        await client.set_logging_level("info")
    result = await call(client, "chatty", {})
    check(text_of(result) == "chatted", f"chatty: {result!r}")
    # (In discovery mode every request asked for logs: greet's print is there too.)
    chatty = [log for log in notes.logs if log.data["tool"] == "chatty"]
    with anyio.fail_after(HANG):
        while len(chatty) < 3:
            await notes.wait_for_logs(len(notes.logs) + 1)
            chatty = [log for log in notes.logs if log.data["tool"] == "chatty"]
    lines = [(log.level, log.logger, log.data["message"]) for log in chatty]
    check(lines == [("info", "wait", "started"), ("info", "wait", "working"),
                    ("warning", "wait", "almost done")], f"log lines: {lines}")
    ok("plugin logs as notifications/message")

    # progress for a long call
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    result = await call(client, "nap", {"ms": 1300}, progress_callback=on_progress)
    check(text_of(result) == "rested", f"nap: {result!r}")
    check(len(progress) >= 1, "a call with a progress token that runs 1.3 s reports progress")
    check(progress == sorted(progress) and progress[0] > 0, f"progress increases: {progress}")
    # The first one comes 50 ms after the start, not after a whole interval (0.5 s).
    check(progress[0] < 0.4, f"the first progress notification comes early: {progress}")
    ok(f"progress ({len(progress)} notifications)")

    # cancellation reaches the sandbox: the plugin's HTTP request is aborted
    async with anyio.create_task_group() as group:
        async def doomed() -> None:
            await client.call_tool("fetch", {"url": never.url})

        group.start_soon(doomed)
        arrived = await anyio.to_thread.run_sync(never.arrived.wait, HANG)
        check(arrived, "the plugin's request reached the HTTP server")
        group.cancel_scope.cancel()
    closed = await anyio.to_thread.run_sync(never.closed.wait, HANG)
    check(closed, "cancelling the call closed the plugin's HTTP connection")
    result = await call(client, "greet", {"name": "again"})
    check(text_of(result) == "Hello, again!", f"the server serves after a cancellation: {result!r}")
    ok("cancellation")

    # hot reload: add, change, remove a plugin file
    added = plugins / "added.lua"
    added.write_text(ADDED_V1)
    await notes.wait_for(1, "adding added.lua")
    tools = await tool_names(client)
    check("added" in tools and tools["added"].description == "first version", f"after adding: {sorted(tools)}")
    check(text_of(await call(client, "added", {})) == "v1", "the added tool runs")
    added.write_text(ADDED_V2)
    await notes.wait_for(2, "changing added.lua")
    tools = await tool_names(client)
    check(tools["added"].description == "second version", f"after changing: {tools['added']!r}")
    check(text_of(await call(client, "added", {})) == "v2", "the changed tool runs its new code")
    result = await call(client, "greet_count", {})
    check(text_of(result) == "2", f"the other plugins kept their state, greet count: {text_of(result)!r}")
    added.unlink()
    await notes.wait_for(3, "removing added.lua")
    tools = await tool_names(client)
    check("added" not in tools and "greet" in tools, f"after removing: {sorted(tools)}")
    ok("list_changed after file changes")


@asynccontextmanager
async def http_server(command: list[str], env: dict[str, str],
                      stderr: list[str] | None = None) -> AsyncIterator[str]:
    """Runs `toolcell serve --http` and yields its URL; stops it with SIGTERM and checks it
    exits cleanly. The server's stderr lines are collected into `stderr` when given, for
    checks of its warnings."""
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = [] if stderr is None else stderr
    found = threading.Event()
    url: list[str] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            sys.stderr.write(f"[toolcell] {line}")
            match = re.search(r"serving MCP at (http://\S+)", line)
            if match and not url:
                url.append(match.group(1))
                found.set()
        found.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        await anyio.to_thread.run_sync(found.wait, HANG)
        check(bool(url), f"toolcell serve --http printed its address; stderr: {''.join(lines)!r}")
        yield url[0]
    finally:
        process.terminate()
        try:
            code = process.wait(HANG)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError("toolcell serve --http did not stop on SIGTERM")
        reader.join(HANG)
        assert process.stdout is not None
        stdout = process.stdout.read()
        check(stdout == "", f"serve --http printed nothing on stdout, got {stdout!r}")
        check(code == 0, f"serve --http exits 0 on SIGTERM, got {code}")
    ok("the HTTP server stopped cleanly on SIGTERM")


def options_parser(description: str) -> argparse.ArgumentParser:
    """The options every script here takes: the toolcell binary (made absolute, since the
    server runs in another directory) and the transport."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--toolcell", required=True, type=lambda path: str(Path(path).resolve()))
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    return parser


async def main() -> None:
    parser = options_parser(__doc__)
    parser.add_argument("--mode", choices=["legacy", "auto"], required=True)
    options = parser.parse_args()
    toolcell = options.toolcell

    never = NeverServer()
    with tempfile.TemporaryDirectory() as plugins_dir, tempfile.TemporaryDirectory() as root:
        plugins = Path(plugins_dir)
        (plugins / "greet.lua").write_text(GREET)
        (plugins / "wait.lua").write_text(WAIT + CHATTY)
        env = dict(os.environ)
        for name in ("CLM_DEBUG_LOG", "TOOLCELL_DEBUG_LOG", "RUST_LOG"):
            env.pop(name, None)
        env["TOOLCELL_DEBUG_LOG"] = str(Path(root) / "debug.log")
        args = ["serve", "--plugins", str(plugins), "--root", root, "--watch", "--allow-http", "127.0.0.1"]
        notes = Notifications()
        if options.transport == "stdio":
            server: Any = StdioServerParameters(command=toolcell, args=args, env=env, cwd=root)
            await session(server, options.mode, plugins, never, notes)
        else:
            command = [toolcell, *args, "--http", "127.0.0.1:0"]
            async with http_server(command, env) as url:
                await session(url, options.mode, plugins, never, notes)
        log = (Path(root) / "debug.log").read_text()
        check("loaded greet.lua" in log and "greet was called" in log,
              f"the plugin's print went to the debug log: {log!r}")
        ok("plugin output went to the debug log")
    never.stop()
    print("all checks passed", flush=True)


async def session(server: Any, mode: str, plugins: Path, never: NeverServer, notes: Notifications) -> None:
    if mode == "legacy":
        # Sessions that began with `initialize` get list changes as plain notifications.
        async with Client(server, mode=mode, message_handler=notes.handler,
                          logging_callback=notes.on_log) as client:
            await run_checks(client, mode, plugins, never, notes)
        return
    # 2026-07-28: the client opts in with `subscriptions/listen`, and asks for logs in
    # each request's `_meta`.
    async with Client(server, mode=mode, logging_callback=notes.on_log, log_level="info") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            check(subscription.honored.tools_list_changed is True,
                  f"the server honors tools_list_changed: {subscription.honored!r}")

            async def forward() -> None:
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        notes.note()

            async with anyio.create_task_group() as group:
                group.start_soon(forward)
                await run_checks(client, mode, plugins, never, notes)
                group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
