"""`toolcell serve --http` as an orchestrator sees it: the probes, and SIGTERM while a
slow tool call is in flight, driven by the official MCP Python SDK (`pip install mcp`).

Run by host/tests/serve.rs (so `cargo test` runs it):

    python3 tests/mcp/shutdown.py --toolcell BIN

1. `/healthz` answers from the start, `/readyz` once the plugins are loaded; then a
   call of two seconds is in flight when SIGTERM arrives: the listening socket closes
   at once (new connections are refused), the call still completes with its result,
   and the process exits 0.
2. With `--shutdown-grace 1`, a call of 20 s is cut: the process exits 0 within the
   grace period and the few seconds it takes to close, and the call does not complete.

Each check prints `ok - NAME`; the first failure raises, which exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

# Bounds that only catch hangs.
HANG = 60.0

SLOW = """
clm.tool_register("slow", {
  description = "Sleeps, then answers",
  params_schema = { type = "object", properties = { ms = { type = "integer" } }, required = { "ms" } },
  invoke = function(args, ctx)
    clm.sleep(args.ms)
    ctx:complete("slept " .. args.ms .. " ms")
  end,
})
"""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def ok(name: str) -> None:
    print(f"ok - {name}", flush=True)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=HANG) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class Server:
    """A `toolcell serve --http 127.0.0.1:0` process and what its stderr announced."""

    def __init__(self, toolcell: str, plugins: Path, root: str, grace: int) -> None:
        env = dict(os.environ)
        for name in ("CLM_DEBUG_LOG", "TOOLCELL_DEBUG_LOG", "RUST_LOG"):
            env.pop(name, None)
        self.process = subprocess.Popen(
            [toolcell, "serve", "--plugins", str(plugins), "--root", root,
             "--http", "127.0.0.1:0", "--shutdown-grace", str(grace)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.listening = threading.Event()
        self.serving = threading.Event()
        self.base = ""
        self.url = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            sys.stderr.write(f"[toolcell] {line}")
            if match := re.search(r"listening on (http://\S+)", line):
                self.base = match.group(1)
                self.listening.set()
            if match := re.search(r"serving MCP at (http://\S+)", line):
                self.url = match.group(1)
                self.serving.set()
        self.listening.set()
        self.serving.set()

    def address(self) -> tuple[str, int]:
        host, port = self.base.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    async def wait_for(self, event: threading.Event, what: str) -> None:
        await anyio.to_thread.run_sync(event.wait, HANG)
        check(self.process.poll() is None and event.is_set(),
              f"toolcell announced {what}; stderr: {''.join(self.lines)!r}")

    async def exit_code(self, limit: float) -> int | None:
        try:
            return await anyio.to_thread.run_sync(lambda: self.process.wait(limit))
        except subprocess.TimeoutExpired:
            self.process.kill()
            return None


def refuses_connections(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def text_of(result: types.CallToolResult) -> str:
    check(len(result.content) == 1, f"expected one content block, got {result.content!r}")
    block = result.content[0]
    check(isinstance(block, types.TextContent), f"expected text content, got {block!r}")
    return block.text


async def drain_lets_the_call_finish(toolcell: str, plugins: Path, root: str) -> None:
    server = Server(toolcell, plugins, root, grace=15)
    await server.wait_for(server.listening, "its address")
    status, body = get(server.base + "/healthz")
    check((status, body) == (200, "ok\n"), f"/healthz: {status} {body!r}")
    ok("/healthz answers")
    await server.wait_for(server.serving, "the MCP endpoint")
    status, body = get(server.base + "/readyz")
    check((status, body) == (200, "ready\n"), f"/readyz once loaded: {status} {body!r}")
    ok("/readyz is ready once the plugins are loaded")

    results: list[types.CallToolResult] = []
    refused: list[bool] = []
    try:
        async with Client(server.url, mode="legacy") as client:
            # The SDK lists the tools before it accepts a call's result (to check it
            # against the tool's output schema); once draining, that request could not
            # connect.
            with anyio.fail_after(HANG):
                await client.list_tools(cache_mode="refresh")

            async def slow() -> None:
                with anyio.fail_after(HANG):
                    results.append(await client.call_tool("slow", {"ms": 2000}))

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await anyio.sleep(0.5)
                check(not results, "the call is still in flight")
                server.process.send_signal(signal.SIGTERM)
                await anyio.sleep(0.3)
                refused.append(refuses_connections(server.address()))
    except Exception:
        # Once the drain ends, the server closes the session and the SDK's attempts
        # to reconnect its notification stream fail; the result came before that.
        pass
    check(refused == [True], "new connections are refused once draining")
    ok("SIGTERM closes the listening socket at once")
    check(len(results) == 1 and text_of(results[0]) == "slept 2000 ms",
          f"the call in flight completed: {results!r}")
    ok("the call in flight completed after SIGTERM")
    code = await server.exit_code(HANG)
    check(code == 0, f"exit 0 after the drain, got {code}; stderr: {''.join(server.lines)!r}")
    ok("the server exits 0 after the drain")


async def grace_bounds_the_drain(toolcell: str, plugins: Path, root: str) -> None:
    server = Server(toolcell, plugins, root, grace=1)
    await server.wait_for(server.serving, "the MCP endpoint")
    outcome: list[Any] = []
    exited: list[tuple[int | None, float]] = []
    try:
        async with Client(server.url, mode="legacy") as client:
            with anyio.fail_after(HANG):
                await client.list_tools(cache_mode="refresh")

            async def slow() -> None:
                try:
                    outcome.append(await client.call_tool("slow", {"ms": 20000}))
                except Exception as error:  # the server cancels it or goes away
                    outcome.append(error)

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await anyio.sleep(0.5)
                started = time.monotonic()
                server.process.send_signal(signal.SIGTERM)
                code = await server.exit_code(HANG)
                exited.append((code, time.monotonic() - started))
                with anyio.move_on_after(5):
                    while not outcome:
                        await anyio.sleep(0.05)
                group.cancel_scope.cancel()
    except Exception:
        pass  # closing a session whose server is gone may fail; that is not the point here
    check(bool(exited), "the server exited")
    code, elapsed = exited[0]
    check(code == 0, f"exit 0 after the grace period, got {code}; stderr: {''.join(server.lines)!r}")
    check(elapsed < 6, f"the server exited within the grace period and the close: {elapsed:.1f} s")
    check(not any(isinstance(item, types.CallToolResult) and not item.is_error for item in outcome),
          f"the 20 s call did not complete: {outcome!r}")
    ok(f"a call longer than --shutdown-grace is cut and the server exits 0 ({elapsed:.1f} s)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--toolcell", required=True)
    options = parser.parse_args()
    toolcell = str(Path(options.toolcell).resolve())
    with tempfile.TemporaryDirectory() as plugins_dir, tempfile.TemporaryDirectory() as root:
        plugins = Path(plugins_dir)
        (plugins / "slow.lua").write_text(SLOW)
        await drain_lets_the_call_finish(toolcell, plugins, root)
        await grace_bounds_the_drain(toolcell, plugins, root)
    print("all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main)
