"""Tool search through `toolcell serve --deferred`, read with the official MCP Python SDK.

Run by host/tests/mcp.rs:

    python3 tests/mcp/search.py --toolcell BIN --transport stdio|http

The server runs 1000 tools of ten real Lua plugins, deferred, and one plugin the
configuration keeps listed; `tools/list` shows that one and `search_tools`, a search
adds what it finds to the session's list and tells the client so
(`notifications/tools/list_changed`), and a denied tool is never found. Each check
prints `ok - NAME`; the first failure raises, which exits non-zero with the reason.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from client import Notifications, call, check, http_server, ok, options_parser, text_of, tool_names

FILLER = ["apple", "river", "stone", "cloud", "maple", "tiger", "piano", "ocean", "lemon", "comet"]

CONFIG = """
[plugins.keep]
defer = false

[permissions]
deny = ["danger_*"]
"""


def plugin(index: int) -> str:
    """100 tools described by filler words; two of plugin 7 and 3 stand out."""
    lines = []
    for tool in range(100):
        if (index, tool) == (7, 42):
            name, description = "convert_length", "Convert a length between metric and imperial units"
        elif (index, tool) == (3, 5):
            name, description = "danger_length", "Erase every imperial length"
        else:
            name = f"p{index}_t{tool}"
            description = f"The {FILLER[tool % 10]} {FILLER[(tool // 10 + index) % 10]} tool"
        lines.append(
            f'clm.tool_register("{name}", {{ description = "{description}", '
            f'invoke = function(_, ctx) ctx:complete("{name} ran") end }})'
        )
    return "\n".join(lines) + "\n"


async def run_checks(client: Client, notes: Notifications) -> None:
    capability = client.server_capabilities.tools
    check(capability is not None and capability.list_changed is True,
          f"the server says its list may change: {capability!r}")
    tools = await tool_names(client)
    check(list(tools) == ["always_here", "search_tools"],
          f"only the tools not deferred, and search_tools: {list(tools)}")
    schema = tools["search_tools"].input_schema
    check(schema.get("required") == ["query"], f"search_tools' schema: {schema!r}")
    ok("tools/list of 1001 tools shows the one kept listed and search_tools")

    try:
        await call(client, "convert_length", {})
        raise AssertionError("a deferred tool not found yet must be unknown")
    except MCPError as error:
        check("unknown tool 'convert_length'" in str(error), str(error))
    ok("a deferred tool is unknown until found")

    result = await call(client, "search_tools", {"query": "convert an imperial length", "limit": 3})
    check(result.is_error is not True, f"the search completes: {result!r}")
    found = json.loads(text_of(result))["tools"]
    check([tool["name"] for tool in found] == ["convert_length"],
          f"the match, and not the denied tool: {found!r}")
    check(found[0]["input_schema"]["type"] == "object", f"its schema: {found[0]!r}")
    await notes.wait_for(1, "a search that found a tool")
    tools = await tool_names(client)
    check(list(tools) == ["always_here", "convert_length", "search_tools"],
          f"the found tool is listed: {list(tools)}")
    result = await call(client, "convert_length", {})
    check(text_of(result) == "convert_length ran", f"and callable: {result!r}")
    ok("search_tools finds, lists and tells the client")

    result = await call(client, "search_tools", {"query": "convert length"})
    check([tool["name"] for tool in json.loads(text_of(result))["tools"]] == ["convert_length"],
          f"found again: {text_of(result)!r}")
    result = await call(client, "search_tools", {"query": "x", "limit": 0})
    check(result.is_error is True and "`limit` must be a whole number" in text_of(result),
          f"bad arguments: {result!r}")
    with anyio.move_on_after(0.5):
        await notes.wait_for(2, "a search that found nothing new")
    check(notes.count == 1, f"no list change when nothing new was found: {notes.count}")
    ok("a search that adds nothing changes nothing")


async def main() -> None:
    options = options_parser(__doc__).parse_args()
    toolcell = options.toolcell
    with tempfile.TemporaryDirectory() as plugins_dir, tempfile.TemporaryDirectory() as root:
        plugins = Path(plugins_dir)
        for index in range(10):
            (plugins / f"p{index}.lua").write_text(plugin(index))
        (plugins / "keep.lua").write_text(
            'clm.tool_register("always_here", { invoke = function(_, ctx) ctx:complete("here") end })\n'
        )
        config = Path(root) / "toolcell.toml"
        config.write_text(CONFIG)
        env = dict(os.environ)
        for name in ("CLM_DEBUG_LOG", "TOOLCELL_DEBUG_LOG", "RUST_LOG"):
            env.pop(name, None)
        args = ["serve", "--plugins", str(plugins), "--root", root, "--config", str(config), "--deferred"]
        if options.transport == "stdio":
            server: Any = StdioServerParameters(command=toolcell, args=args, env=env, cwd=root)
            await session(server)
        else:
            async with http_server([toolcell, *args, "--http", "127.0.0.1:0"], env) as url:
                await session(url)
    print("all checks passed", flush=True)


async def session(server: Any) -> None:
    notes = Notifications()
    async with Client(server, mode="legacy", message_handler=notes.handler) as client:
        await run_checks(client, notes)


if __name__ == "__main__":
    anyio.run(main)
