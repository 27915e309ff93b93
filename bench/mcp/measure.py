"""Measures `toolcell serve` over stdio with the official MCP Python SDK, and over
streamable HTTP against stdio with plain clients.

    python3 bench/mcp/measure.py [--toolcell target/release/toolcell] [--calls 2000] [--starts 30]

Three numbers:

(a) What a trivial tool's `tools/call` adds over the protocol round trip itself. The
    floor is `toolcell-floor`, a built-in tool (enabled by the hidden flag
    `--bench-floor-tool`) that answers "pong" from the MCP handler without touching the
    runtime: the same request and result shapes, the same client and transport, only no
    lookup, no argument check and no sandbox. `trivial` is a Lua plugin that completes
    with "pong" (no schema); `checked` is the same with a one-property schema, so its
    arguments are validated. Calls alternate between the tools so that drift in the
    machine's load hits each alike; the report is the median of each and the difference
    of the medians (the budget: 0.1 ms).

(b) How soon the first `tools/list` is answered after the server starts, with 10 Lua
    plugins and a warm compiled-code cache (the budget: 50 ms). "client" is the official
    SDK's whole path: spawn, handshake, tools/list. "pipe" writes initialize and
    tools/list to the server's stdin at once and times the answer to tools/list, which
    is the server's own part without the SDK's overhead.

(c) A trivial `tools/call` over streamable HTTP against the same over stdio (the budget:
    HTTP within 0.1 ms of stdio). Both sides use the plainest client: over stdio a line
    written to the server's stdin and one read from its stdout; over HTTP one keep-alive
    connection on a socket the client does not tune (no TCP_NODELAY), as Node's fetch or
    a hand-written client leaves it, each request sent in one write and its SSE answer
    read whole. Such a client meets Nagle's algorithm on the server's side unless the
    server turns it off, which used to cost about 40 ms per request (the client's
    delayed acknowledgement).

Nothing here is a test: it prints a table and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

TRIVIAL = """
clm.tool_register("trivial", {
  description = "Answers pong",
  invoke = function(_, ctx) ctx:complete("pong") end,
})
clm.tool_register("checked", {
  description = "Answers pong after its argument was checked",
  params_schema = { type = "object", properties = { name = { type = "string" } }, required = { "name" } },
  invoke = function(_, ctx) ctx:complete("pong") end,
})
"""

PLUGIN = """
clm.tool_register("tool_{n}", {{
  description = "Tool number {n}",
  params_schema = {{ type = "object", properties = {{ text = {{ type = "string" }} }}, required = {{ "text" }} }},
  invoke = function(args, ctx) ctx:complete(args.text) end,
}})
"""


def summary(samples_ns: list[int]) -> tuple[float, float, float]:
    ordered = sorted(samples_ns)
    ms = [value / 1e6 for value in ordered]
    return statistics.median(ms), ms[len(ms) // 10], ms[len(ms) * 9 // 10]


async def call_latency(toolcell: str, env: dict[str, str], calls: int, mode: str) -> dict[str, list[int]]:
    with tempfile.TemporaryDirectory() as plugins, tempfile.TemporaryDirectory() as root:
        Path(plugins, "trivial.lua").write_text(TRIVIAL)
        server = StdioServerParameters(
            command=toolcell,
            args=["serve", "--plugins", plugins, "--root", root, "--bench-floor-tool"],
            env=env,
        )
        requests = [("toolcell-floor", {}), ("trivial", {}), ("checked", {"name": "x"})]
        samples: dict[str, list[int]] = {name: [] for name, _ in requests}
        async with Client(server, mode=mode) as client:
            for _ in range(200):
                for name, args in requests:
                    await client.call_tool(name, args)
            for _ in range(calls):
                for name, args in requests:
                    started = time.perf_counter_ns()
                    result = await client.call_tool(name, args)
                    samples[name].append(time.perf_counter_ns() - started)
                    assert result.content[0].text == "pong", result
        return samples


def write_plugins(directory: str, count: int) -> None:
    for n in range(count):
        Path(directory, f"plugin_{n:02}.lua").write_text(PLUGIN.format(n=n))


async def first_list_client(toolcell: str, env: dict[str, str], plugins: str, mode: str) -> int:
    server = StdioServerParameters(command=toolcell, args=["serve", "--plugins", plugins], env=env)
    started = time.perf_counter_ns()
    async with Client(server, mode=mode) as client:
        listing = await client.list_tools()
        elapsed = time.perf_counter_ns() - started
    assert len(listing.tools) == 10, listing
    return elapsed


def first_list_pipe(toolcell: str, env: dict[str, str], plugins: str) -> int:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    payload = "".join(json.dumps(message) + "\n" for message in messages).encode()
    started = time.perf_counter_ns()
    process = subprocess.Popen([toolcell, "serve", "--plugins", plugins], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(payload)
    process.stdin.flush()
    elapsed = None
    for line in process.stdout:
        message = json.loads(line)
        if message.get("id") == 2:
            elapsed = time.perf_counter_ns() - started
            assert len(message["result"]["tools"]) == 10, message
            break
    process.stdin.close()
    process.wait(30)
    assert elapsed is not None, "no answer to tools/list"
    return elapsed


INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class PlainHttp:
    """One keep-alive HTTP/1.1 connection on a socket left as the system made it (Nagle's
    algorithm on, delayed acknowledgements on): requests in one write, answers read whole
    (chunked SSE or a fixed length)."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.host, self.port, self.path = parsed.hostname, parsed.port, parsed.path
        self.sock = socket.create_connection((self.host, self.port))
        self.reader = self.sock.makefile("rb")
        self.session: str | None = None

    def post(self, message: dict) -> list[dict]:
        body = json.dumps(message).encode()
        headers = [f"POST {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                   "Content-Type: application/json", "Accept: application/json, text/event-stream",
                   f"Content-Length: {len(body)}", "MCP-Protocol-Version: 2025-06-18"]
        if self.session:
            headers.append(f"Mcp-Session-Id: {self.session}")
        self.sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode() + body)
        status = self.reader.readline()
        assert b" 200 " in status or b" 202 " in status, status
        fields: dict[str, str] = {}
        while (line := self.reader.readline().strip()):
            name, _, value = line.decode().partition(":")
            fields[name.strip().lower()] = value.strip()
        self.session = fields.get("mcp-session-id", self.session)
        if fields.get("transfer-encoding") == "chunked":
            data = b""
            while (size := int(self.reader.readline().strip(), 16)):
                data += self.reader.read(size)
                self.reader.readline()
            self.reader.readline()
        else:
            data = self.reader.read(int(fields.get("content-length", "0")))
        return [json.loads(line[5:]) for line in data.decode().splitlines()
                if line.startswith("data:") and line[5:].strip()]

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class PlainStdio:
    """Lines to the server's stdin and from its stdout."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process

    def post(self, message: dict) -> list[dict]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        if "id" not in message:
            return []
        return [json.loads(self.process.stdout.readline())]


def plain_calls(client: PlainHttp | PlainStdio, calls: int) -> dict[str, list[int]]:
    client.post(INITIALIZE)
    client.post(INITIALIZED)
    requests = [("toolcell-floor", {}), ("trivial", {})]
    samples: dict[str, list[int]] = {name: [] for name, _ in requests}
    number = 0
    for round in range(200 + calls):
        for name, args in requests:
            number += 1
            message = {"jsonrpc": "2.0", "id": number, "method": "tools/call",
                       "params": {"name": name, "arguments": args}}
            started = time.perf_counter_ns()
            answers = client.post(message)
            elapsed = time.perf_counter_ns() - started
            assert answers[-1]["result"]["content"][0]["text"] == "pong", answers
            if round >= 200:
                samples[name].append(elapsed)
    return samples


def http_against_stdio(toolcell: str, env: dict[str, str], calls: int) -> dict[str, dict[str, list[int]]]:
    results: dict[str, dict[str, list[int]]] = {}
    with tempfile.TemporaryDirectory() as plugins, tempfile.TemporaryDirectory() as root:
        Path(plugins, "trivial.lua").write_text(TRIVIAL)
        args = [toolcell, "serve", "--plugins", plugins, "--root", root, "--bench-floor-tool"]
        process = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)
        results["stdio"] = plain_calls(PlainStdio(process), calls)
        assert process.stdin is not None
        process.stdin.close()
        process.wait(30)
        process = subprocess.Popen(args + ["--http", "127.0.0.1:0"], env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        url = None
        for line in process.stderr:
            if (match := re.search(r"serving MCP at (http://\S+)", line)):
                url = match.group(1)
                break
        assert url, "toolcell serve --http printed its address"
        client = PlainHttp(url)
        try:
            results["http"] = plain_calls(client, calls)
        finally:
            client.close()
            process.terminate()
            process.wait(30)
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolcell", default="target/release/toolcell")
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per tool")
    parser.add_argument("--starts", type=int, default=30, help="server starts per first-list measurement")
    options = parser.parse_args()
    toolcell = str(Path(options.toolcell).resolve())

    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ)
        env["TOOLCELL_CACHE_DIR"] = cache
        for name in ("CLM_DEBUG_LOG", "TOOLCELL_DEBUG_LOG", "RUST_LOG"):
            env.pop(name, None)

        print(f"(a) tools/call round trip over stdio, {options.calls} calls per tool, median [p10, p90] in ms")
        print(f"{'protocol':<12} {'tool':<16} {'median':>8} {'p10':>8} {'p90':>8} {'over floor':>11}")
        for mode in ("legacy", "auto"):
            samples = await call_latency(toolcell, env, options.calls, mode)
            floor = summary(samples["toolcell-floor"])[0]
            for name in ("toolcell-floor", "trivial", "checked"):
                median, p10, p90 = summary(samples[name])
                extra = "" if name == "toolcell-floor" else f"{median - floor:+.3f}"
                label = "initialize" if mode == "legacy" else "discovered"
                print(f"{label:<12} {name:<16} {median:8.3f} {p10:8.3f} {p90:8.3f} {extra:>11}")

        with tempfile.TemporaryDirectory() as plugins:
            write_plugins(plugins, 10)
            # Warm the compiled-code cache.
            subprocess.run([toolcell, "list", "--plugins", plugins], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            print()
            print(f"(b) start to first tools/list answer, 10 plugins, warm cache, {options.starts} starts, ms")
            print(f"{'path':<22} {'median':>8} {'min':>8} {'max':>8}")
            pipe = [first_list_pipe(toolcell, env, plugins) for _ in range(options.starts)]
            rows = [("pipe (server only)", pipe)]
            for mode in ("legacy", "auto"):
                client = [await first_list_client(toolcell, env, plugins, mode) for _ in range(options.starts)]
                rows.append((f"client ({'initialize' if mode == 'legacy' else 'discovered'})", client))
            for label, values in rows:
                ms = sorted(value / 1e6 for value in values)
                print(f"{label:<22} {statistics.median(ms):8.2f} {ms[0]:8.2f} {ms[-1]:8.2f}")

        print()
        print(f"(c) tools/call round trip, plain clients, {options.calls} calls per tool, median [p10, p90] in ms")
        print(f"{'transport':<10} {'tool':<16} {'median':>8} {'p10':>8} {'p90':>8} {'over stdio':>11}")
        transports = http_against_stdio(toolcell, env, options.calls)
        for name in ("toolcell-floor", "trivial"):
            stdio = summary(transports["stdio"][name])[0]
            for transport in ("stdio", "http"):
                median, p10, p90 = summary(transports[transport][name])
                extra = "" if transport == "stdio" else f"{median - stdio:+.3f}"
                print(f"{transport:<10} {name:<16} {median:8.3f} {p10:8.3f} {p90:8.3f} {extra:>11}")


if __name__ == "__main__":
    anyio.run(main)
