"""`toolcell serve --http` against clients that hold connections and send nothing,
driven by plain sockets and the official MCP Python SDK (`pip install mcp`).

Run by host/tests/serve.rs (so `cargo test` runs it):

    python3 tests/mcp/edges.py --toolcell BIN

1. Under `ulimit -n 1024` (prlimit, for the server process only), 1100 connections from
   127.0.0.2 that send nothing to each listener (`--http`, `--metrics`): the ones over
   the per-peer cap are answered 503 at once and closed; `/healthz`, the metrics and an
   authenticated tool call (the scheme written `bearer`) from 127.0.0.1 answer within a
   second; the idle connections are closed once the request-head timeout has passed;
   stderr stays a few lines.
   With them held, the reproduction of a schema pattern that backtracked (32-38 s of host
   CPU per call, a trivial call of another session delayed by 8.5 s): its tools are refused
   at load, saying why, and another session's trivial call answers within a second while
   the first tries them.
2. A client from 127.0.0.3 that pipelines requests and never reads the answers, against a
   server allowing one connection per address: while the server's write is stuck, the
   address's next connection is refused; once the write has been pending for the
   write-stall timeout, the connection is closed and the address is served again.
   (Run beside the other checks, on a server of its own, so its wait adds no time.)
3. Under `ulimit -n 128` with caps above it, 300 idle connections exhaust the server's
   file descriptors: accepting fails, backs off (the server burns next to no CPU) and
   says so in a line or two, and the server answers again once the clients let go.

Each check prints `ok - NAME`; the first failure raises, which exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# Bounds that only catch hangs.
HANG = 60.0
# What the README's Limits table says.
PER_PEER = 64
HEAD_TIMEOUT = 10.0
WRITE_STALL = 30.0
# How fast the server must answer while it is attacked.
PROMPT = 1.0

TOKEN = "edges-token-of-thirty-two-chars!"

ECHO = """
clm.tool_register("echo", {
  description = "Says what it is given",
  params_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  invoke = function(args, ctx) ctx:complete(args.text) end,
})
"""


# Issue 33's reproduction 1: a back-reference in an output schema and a params schema.
BACKTRACK = """
local backtracking = "^(a|a)*\\\\1b"
clm.tool_register("flood_out", {
  output_schema = { type = "array", items = { type = "string", pattern = backtracking } },
  invoke = function(_, c)
    local items = {}
    for i = 1, 1000 do items[i] = string.rep("a", 25) .. "!" end
    c:complete(json.encode(items))
  end,
})
clm.tool_register("flood_in", {
  params_schema = { type = "object", properties = { s = { type = "array", items = { type = "string", pattern = backtracking } } } },
  invoke = function(_, c) c:complete("ran") end,
})
"""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def ok(name: str) -> None:
    print(f"ok - {name}", flush=True)


class Server:
    """`toolcell serve --http 127.0.0.1:0 --metrics 127.0.0.1:0` with its open-file
    limit set to `nofile`, and what its stderr announced."""

    def __init__(self, toolcell: str, plugins: Path, root: str, token_file: Path,
                 nofile: int, extra: list[str]) -> None:
        env = dict(os.environ)
        for name in ("CLM_DEBUG_LOG", "TOOLCELL_DEBUG_LOG", "RUST_LOG", "TOOLCELL_TOKEN"):
            env.pop(name, None)
        self.process = subprocess.Popen(
            ["prlimit", f"--nofile={nofile}:{nofile}", "--", toolcell, "serve",
             "--plugins", str(plugins), "--root", root, "--token-file", str(token_file),
             "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", *extra],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.stderr = bytearray()
        self.base = ""
        self.url = ""
        self.metrics = ""
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        check(self.ready.wait(HANG) and self.url != "" and self.metrics != "",
              f"toolcell announced its addresses; stderr: {bytes(self.stderr)!r}")

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr += line
            text = line.decode(errors="replace")
            if len(self.stderr) < 64 * 1024:
                sys.stderr.write(f"[toolcell] {text}")
            if match := re.search(r"listening on (http://\S+)", text):
                self.base = match.group(1)
            if match := re.search(r"serving metrics at (http://\S+)", text):
                self.metrics = match.group(1)
            if match := re.search(r"serving MCP at (http://\S+)", text):
                self.url = match.group(1)
            if self.url and self.metrics:
                self.ready.set()
        self.ready.set()

    def cpu_seconds(self) -> float:
        """User and system CPU time of the server (prlimit execs it in place)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(HANG)
        except subprocess.TimeoutExpired:
            self.process.kill()


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)
    return host, int(port)


def idle_connections(target: tuple[str, int], count: int) -> list[socket.socket]:
    """`count` connections from 127.0.0.2 that send nothing."""
    sockets = []
    for _ in range(count):
        connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        connection.bind(("127.0.0.2", 0))
        connection.settimeout(HANG)
        connection.connect(target)
        sockets.append(connection)
    return sockets


def answered(connection: socket.socket, limit: float) -> bytes | None:
    """What the server sent before closing `connection`, or None if it is still
    open after `limit` seconds."""
    connection.settimeout(limit)
    received = b""
    try:
        while chunk := connection.recv(4096):
            received += chunk
    except socket.timeout:
        return None
    except ConnectionResetError:
        pass
    return received


def timed_get(url: str) -> tuple[float, int, str]:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=HANG) as response:
        body = response.read().decode()
        return time.monotonic() - started, response.status, body


async def caps_and_idle_connections(toolcell: str, plugins: Path, root: str,
                                    token_file: Path) -> None:
    server = Server(toolcell, plugins, root, token_file, nofile=1024, extra=[])
    try:
        opened = time.monotonic()
        held = {name: idle_connections(address(url), 1100)
                for name, url in (("MCP", server.url), ("metrics", server.metrics))}
        for name, sockets in held.items():
            refused = [answered(connection, 5.0) for connection in sockets[PER_PEER:]]
            check(all(reply is not None and reply.startswith(b"HTTP/1.1 503 ")
                      and b"too many connections from 127.0.0.2" in reply for reply in refused),
                  f"{name}: every connection over the per-peer cap is answered 503: "
                  f"{[reply for reply in refused if reply is None or b' 503 ' not in reply][:3]!r}")
            for connection in sockets[PER_PEER:]:
                connection.close()
            del sockets[PER_PEER:]
        ok(f"the 1036 connections over the per-peer cap of {PER_PEER} are answered 503")

        took, status, body = timed_get(server.base + "/healthz")
        check((status, body) == (200, "ok\n") and took < PROMPT, f"/healthz: {status} {body!r} in {took:.3f} s")
        ok(f"/healthz answers in {took:.3f} s")
        took, status, body = timed_get(server.metrics)
        check(status == 200 and "toolcell_calls_total" in body and took < PROMPT,
              f"/metrics: {status} in {took:.3f} s")
        ok(f"/metrics answers in {took:.3f} s")

        client = create_mcp_http_client(headers={"Authorization": f"bearer {TOKEN}"})
        async with Client(streamable_http_client(server.url, http_client=client), mode="legacy") as session:
            with anyio.fail_after(HANG):
                await session.list_tools(cache_mode="refresh")
                started = time.monotonic()
                result = await session.call_tool("echo", {"text": "still here"})
                took = time.monotonic() - started
        block = result.content[0]
        check(isinstance(block, types.TextContent) and block.text == "still here" and took < PROMPT,
              f"the call: {result!r} in {took:.3f} s")
        ok(f"an authenticated call (`bearer`, lower case) answers in {took:.3f} s")

        await backtracking_patterns_stall_nothing(server)

        for name, sockets in held.items():
            for connection in sockets:
                reply = answered(connection, HEAD_TIMEOUT + 10.0 - (time.monotonic() - opened))
                check(reply == b"", f"{name}: an idle connection is closed without an answer: {reply!r}")
            waited = time.monotonic() - opened
            check(waited >= HEAD_TIMEOUT - 1.0, f"{name}: closed after {waited:.1f} s, before the timeout")
            for connection in sockets:
                connection.close()
        ok(f"idle connections are closed after the {HEAD_TIMEOUT:.0f} s request-head timeout")

        lines = bytes(server.stderr).decode(errors="replace").splitlines()
        refusals = [line for line in lines if "refused" in line and "connection" in line]
        check(len(server.stderr) < 4096 and 1 <= len(refusals) <= 4,
              f"stderr stays small ({len(server.stderr)} bytes): {lines!r}")
        ok(f"stderr stays small: {len(server.stderr)} bytes, {len(refusals)} line(s) on refusals")
    finally:
        server.stop()


async def backtracking_patterns_stall_nothing(server: Server) -> None:
    text = bytes(server.stderr).decode(errors="replace")
    for tool in ("flood_out", "flood_in"):
        check(f"tool '{tool}' of plugin backtrack.lua is over its schema budget" in text
              and "uses a back-reference" in text, f"{tool} is refused at load: {text!r}")
    ok("the backtracking patterns are refused at load, saying why")

    def session():
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        return Client(streamable_http_client(server.url, http_client=client), mode="legacy")

    attempts: list[str] = []
    trivial: list[float] = []
    async with session() as attacker, session() as other:
        with anyio.fail_after(HANG):
            await other.list_tools(cache_mode="refresh")

            async def attack() -> None:
                arguments = {"s": [("a" * 25) + "!"] * 500}
                for tool, args in (("flood_out", {}), ("flood_in", arguments)):
                    try:
                        await attacker.call_tool(tool, args)
                        attempts.append(f"{tool} ran")
                    except Exception as error:  # unavailable: refused at load
                        attempts.append(f"{tool}: {error}")

            async def trivial_call() -> None:
                await anyio.sleep(0.05)
                started = time.monotonic()
                result = await other.call_tool("echo", {"text": "prompt"})
                trivial.append(time.monotonic() - started)
                block = result.content[0]
                check(isinstance(block, types.TextContent) and block.text == "prompt", f"{result!r}")

            async with anyio.create_task_group() as group:
                group.start_soon(attack)
                group.start_soon(trivial_call)
    check(len(attempts) == 2
          and all(f"tool '{tool}' is unavailable" in attempt and "uses a back-reference" in attempt
                  for tool, attempt in zip(("flood_out", "flood_in"), attempts)),
          f"the attack's tools are unavailable, saying why: {attempts!r}")
    check(trivial[0] < PROMPT, f"another session's trivial call took {trivial[0]:.3f} s")
    ok(f"another session's trivial call answers in {trivial[0]:.3f} s while they are tried")


def raw_get(target: tuple[str, int], source: str, limit: float) -> bytes | None:
    """A `GET /healthz` from `source`: the whole reply, or None if the connection
    is still open after `limit` seconds."""
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connection.bind((source, 0))
    connection.settimeout(limit)
    try:
        connection.connect(target)
        connection.sendall(b"GET /healthz HTTP/1.1\r\nhost: edges\r\nconnection: close\r\n\r\n")
        return answered(connection, limit)
    finally:
        connection.close()


def unread_answers_free_their_place(toolcell: str, plugins: Path, root: str,
                                    token_file: Path) -> None:
    server = Server(toolcell, plugins, root, token_file, nofile=1024,
                    extra=["--max-connections-per-peer", "1"])
    try:
        target = address(server.base)
        reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.bind(("127.0.0.3", 0))
        reader.settimeout(HANG)
        reader.connect(target)
        reader.setblocking(False)
        requests = b"GET /healthz HTTP/1.1\r\nhost: edges\r\n\r\n" * 1024
        sent = 0
        # Pipeline requests until the server stops taking them: its answers fill every
        # buffer between it and a client that reads nothing, so its write is pending.
        while True:
            check(sent < 256 * 1024 * 1024, f"the server kept reading: {sent} bytes sent")
            try:
                sent += reader.send(requests)
                continue
            except BlockingIOError:
                pass
            _, writable, _ = select.select([], [reader], [], 2.0)
            if not writable:
                break
        stalled = time.monotonic()
        reply = raw_get(target, "127.0.0.3", 5.0)
        check(reply is not None and reply.startswith(b"HTTP/1.1 503 ")
              and b"too many connections from 127.0.0.3" in reply,
              f"a stuck connection keeps its place under the per-peer cap: {reply!r}")
        ok(f"a client that reads none of its answers ({sent} bytes of requests) holds its place")
        while True:
            reply = raw_get(target, "127.0.0.3", 5.0)
            if reply is not None and reply.startswith(b"HTTP/1.1 200 "):
                break
            check(time.monotonic() - stalled < WRITE_STALL + 20.0,
                  f"the stuck connection is closed: still refused after "
                  f"{time.monotonic() - stalled:.0f} s: {reply!r}")
            time.sleep(1.0)
        waited = time.monotonic() - stalled
        # The write was pending before the client noticed (up to the 2 s it waited).
        check(waited >= WRITE_STALL - 3.0, f"closed after {waited:.1f} s, before the timeout")
        reader.close()
        ok(f"the connection whose answers were never read is closed ({waited:.0f} s after "
           f"the client stalled; the write-stall timeout is {WRITE_STALL:.0f} s)")
    finally:
        server.stop()


async def accept_failures_back_off(toolcell: str, plugins: Path, root: str,
                                   token_file: Path) -> None:
    server = Server(toolcell, plugins, root, token_file, nofile=128,
                    extra=["--max-connections", "1000", "--max-connections-per-peer", "1000"])
    try:
        sockets = idle_connections(address(server.url), 300)
        time.sleep(1.0)
        before = server.cpu_seconds()
        time.sleep(3.0)
        burnt = server.cpu_seconds() - before
        lines = bytes(server.stderr).decode(errors="replace").splitlines()
        failures = [line for line in lines if "accepting MCP connections failed" in line]
        check(1 <= len(failures) <= 2 and "Too many open files" in failures[0],
              f"accept failures are logged once per interval: {lines[-5:]!r} ({len(lines)} lines)")
        check(burnt < 0.5, f"the server backs off: {burnt:.2f} s of CPU in 3 s")
        ok(f"out of file descriptors, accepting backs off ({burnt:.2f} s of CPU in 3 s, "
           f"{len(failures)} line(s))")
        for connection in sockets:
            connection.close()
        deadline = time.monotonic() + HANG
        while True:
            try:
                took, status, _ = timed_get(server.base + "/healthz")
                if status == 200:
                    break
            except OSError:
                pass
            check(time.monotonic() < deadline, "the server answers again")
            time.sleep(0.2)
        ok("the server answers again once the clients let go")
        check(len(server.stderr) < 4096, f"stderr stays small: {len(server.stderr)} bytes")
    finally:
        server.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolcell", required=True)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    with tempfile.TemporaryDirectory() as directory:
        plugins = Path(directory) / "plugins"
        plugins.mkdir()
        (plugins / "echo.lua").write_text(ECHO)
        (plugins / "backtrack.lua").write_text(BACKTRACK)
        root = Path(directory) / "root"
        root.mkdir()
        token_file = Path(directory) / "token"
        token_file.write_text(TOKEN + "\n")
        failures: list[BaseException] = []

        def unread_answers() -> None:
            try:
                unread_answers_free_their_place(args.toolcell, plugins, str(root), token_file)
            except BaseException as failure:  # re-raised in the main thread below
                failures.append(failure)

        beside = threading.Thread(target=unread_answers)
        beside.start()
        await caps_and_idle_connections(args.toolcell, plugins, str(root), token_file)
        await accept_failures_back_off(args.toolcell, plugins, str(root), token_file)
        beside.join()
        if failures:
            raise failures[0]
    print("all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main)
