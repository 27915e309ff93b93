"""The permission policy of `toolcell serve`, driven by the official MCP Python SDK.

Run by host/tests/policy.rs:

    python3 tests/mcp/policy.py --toolcell BIN --transport stdio|http

The server runs with `[permissions] default = "ask"`, `allow = ["hello"]` and
`deny = ["danger*"]`. A client that can elicit is asked about each `ask` call through a
form, and its answers (allow once, allow for the session, deny with feedback, decline)
decide; "allow for the session" lasts for that session only. A client that cannot elicit
gets `--ask-fallback`: denied by default, allowed with `--ask-fallback allow`. Over HTTP,
a client of protocol 2026-07-28 (`auto` mode) is asked by input-required results, with
no "allow for the session" since it has no session. Each check
prints `ok - NAME`; the first failure raises, which exits non-zero with the reason.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

# The checks shared with the main client script (beside this one).
from client import HANG, check, http_server, ok, options_parser, text_of

# Plugin `policy`: every write is counted, so a check can tell whether the plugin ran.
PLUGIN = """
local writes = 0
clm.tool_register("hello", {
  description = "Greets",
  invoke = function(_, ctx) ctx:complete("hi") end,
})
clm.tool_register("note_write", {
  description = "Writes a note",
  params_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  invoke = function(args, ctx)
    writes = writes + 1
    ctx:complete("written " .. args.text .. " (" .. writes .. ")")
  end,
})
clm.tool_register("erase", {
  description = "Erases the notes",
  invoke = function(_, ctx)
    writes = writes + 1
    ctx:complete("erased")
  end,
})
clm.tool_register("writes", {
  description = "How many writes ran",
  no_prompt = true,
  invoke = function(_, ctx) ctx:complete(tostring(writes)) end,
})
clm.tool_register("danger_zone", {
  description = "Never listed",
  invoke = function(_, ctx) ctx:complete("boom") end,
})
"""

CONFIG = """
[permissions]
default = "ask"
allow = ["hello"]
deny = ["danger*"]
"""


class User:
    """The client's user: answers each elicitation with the next scripted answer, and
    remembers what it was asked."""

    def __init__(self) -> None:
        self.answers: list[types.ElicitResult] = []
        self.asked: list[types.ElicitRequestFormParams] = []

    def will(self, action: str, decision: str | None = None, feedback: str | None = None) -> None:
        content: dict[str, Any] | None = None
        if decision is not None:
            content = {"decision": decision}
            if feedback is not None:
                content["feedback"] = feedback
        self.answers.append(types.ElicitResult(action=action, content=content))

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        check(isinstance(params, types.ElicitRequestFormParams), f"a form elicitation: {params!r}")
        self.asked.append(params)
        check(bool(self.answers), f"an unexpected question: {params.message!r}")
        return self.answers.pop(0)


async def call(client: Client, tool: str, args: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(HANG):
        return await client.call_tool(tool, args)


async def writes(client: Client) -> int:
    return int(text_of(await call(client, "writes", {})))


async def eliciting_session(client: Client, user: User) -> None:
    with anyio.fail_after(HANG):
        listing = await client.list_tools(cache_mode="refresh")
    names = {tool.name for tool in listing.tools}
    check(names == {"hello", "note_write", "erase", "writes"}, f"denied tools are not listed: {sorted(names)}")
    ok("tools/list leaves out the denied tool")

    result = await call(client, "danger_zone", {})
    check(result.is_error is True, f"a denied call is a tool error: {result!r}")
    check(text_of(result) == "[tool failed: tool 'danger_zone' was denied: it matches \"danger*\" in [permissions] deny]",
          f"denied text: {text_of(result)!r}")
    ok("a denied call fails with the reason")

    check(text_of(await call(client, "hello", {})) == "hi", "an allowed tool runs")
    check(user.asked == [], f"an allowed tool asks nobody: {user.asked!r}")
    ok("an allowed tool runs without asking")

    user.will("accept", "allow_once")
    result = await call(client, "note_write", {"text": "a"})
    check(text_of(result) == "written a (1)", f"allowed once: {result!r}")
    check(len(user.asked) == 1, f"asked once: {len(user.asked)}")
    question = user.asked[0]
    check("note_write" in question.message and "'policy'" in question.message and '"text":"a"' in question.message,
          f"the question names the tool, its plugin and the arguments: {question.message!r}")
    schema = question.requested_schema
    check(schema.get("required") == ["decision"], f"the form requires a decision: {schema!r}")
    choices = schema["properties"]["decision"]
    choice_values = [choice["const"] for choice in choices.get("oneOf", [])] or choices.get("enum")
    check(choice_values == ["allow_once", "allow_session", "deny"], f"the choices: {choices!r}")
    ok("ask elicits: allow once")

    user.will("accept", "allow_session")
    check(text_of(await call(client, "note_write", {"text": "b"})) == "written b (2)", "allowed for the session")
    check(len(user.asked) == 2, "allow once asks again next time")
    check(text_of(await call(client, "note_write", {"text": "c"})) == "written c (3)", "still allowed")
    check(len(user.asked) == 2, "allow for the session is remembered")
    ok("allow for the session is remembered in the session")

    user.will("accept", "deny", "not today")
    result = await call(client, "erase", {})
    check(result.is_error is True, f"a denial is a tool error: {result!r}")
    check(text_of(result) == "[tool failed: tool 'erase' was denied: the user denied it: not today]",
          f"denial with feedback: {text_of(result)!r}")
    user.will("decline")
    result = await call(client, "erase", {})
    check(text_of(result) == "[tool failed: tool 'erase' was denied: the user denied it]",
          f"a declined form denies: {text_of(result)!r}")
    check(await writes(client) == 3, "a denied call never reaches the plugin")
    ok("deny, with the user's feedback, and decline")


async def plain_session(client: Client, fallback: str) -> None:
    """A client without elicitation: `ask` follows --ask-fallback."""
    result = await call(client, "note_write", {"text": "x"})
    if fallback == "deny":
        check(result.is_error is True, f"denied without elicitation: {result!r}")
        check(text_of(result).startswith("[tool failed: tool 'note_write' was denied: it needs approval, and the MCP client cannot ask the user"),
              f"the reason says why: {text_of(result)!r}")
        ok("a client that cannot elicit is denied (--ask-fallback deny, the default)")
    else:
        check(result.is_error is not True and text_of(result).startswith("written x"), f"allowed: {result!r}")
        ok("a client that cannot elicit is allowed with --ask-fallback allow")


async def input_required_client(client: Client, user: User) -> None:
    """Protocol 2026-07-28: `ask` goes back to the client as an input-required result,
    and the call runs on once the client calls again with the answer."""
    user.will("accept", "allow_once")
    result = await call(client, "note_write", {"text": "r"})
    check(text_of(result).startswith("written r"), f"allowed once by input-required result: {result!r}")
    question = user.asked[-1]
    check("note_write" in question.message and '"text":"r"' in question.message,
          f"the question names the tool and the arguments: {question.message!r}")
    choices = question.requested_schema["properties"]["decision"]
    choice_values = [choice["const"] for choice in choices.get("oneOf", [])] or choices.get("enum")
    check(choice_values == ["allow_once", "deny"], f"no session to allow for: {choices!r}")
    ok("ask by an input-required result: allow once")

    user.will("accept", "deny", "not now")
    result = await call(client, "erase", {})
    check(text_of(result) == "[tool failed: tool 'erase' was denied: the user denied it: not now]",
          f"denial with feedback: {text_of(result)!r}")
    user.will("decline")
    result = await call(client, "erase", {})
    check(text_of(result) == "[tool failed: tool 'erase' was denied: the user denied it]",
          f"a declined form denies: {text_of(result)!r}")
    ok("deny and decline by input-required results")


async def main() -> None:
    options = options_parser(__doc__).parse_args()
    toolcell = options.toolcell

    with tempfile.TemporaryDirectory() as plugins_dir, tempfile.TemporaryDirectory() as root:
        plugins = Path(plugins_dir)
        (plugins / "policy.lua").write_text(PLUGIN)
        config = Path(root) / "toolcell.toml"
        config.write_text(CONFIG)
        env = dict(os.environ)
        base = ["serve", "--plugins", str(plugins), "--root", root, "--config", str(config)]
        if options.transport == "stdio":
            def server(*extra: str) -> Any:
                return StdioServerParameters(command=toolcell, args=[*base, *extra], env=env, cwd=root)

            user = User()
            async with Client(server(), mode="legacy", elicitation_callback=user) as client:
                await eliciting_session(client, user)
            # A new session starts with no approvals.
            user = User()
            async with Client(server(), mode="legacy", elicitation_callback=user) as client:
                user.will("decline")
                result = await call(client, "note_write", {"text": "d"})
                check(text_of(result) == "[tool failed: tool 'note_write' was denied: the user denied it]"
                      and len(user.asked) == 1, f"a new session asks again: {result!r}")
            ok("a new session asks again")
            async with Client(server(), mode="legacy") as client:
                await plain_session(client, "deny")
            async with Client(server("--ask-fallback", "allow"), mode="legacy") as client:
                await plain_session(client, "allow")
        else:
            command = [toolcell, *base, "--http", "127.0.0.1:0"]
            async with http_server(command, env) as url:
                user = User()
                async with Client(url, mode="legacy", elicitation_callback=user) as client:
                    await eliciting_session(client, user)
                # Another session of the same server starts with no approvals.
                other = User()
                async with Client(url, mode="legacy", elicitation_callback=other) as client:
                    other.will("accept", "deny")
                    result = await call(client, "note_write", {"text": "e"})
                    check(text_of(result) == "[tool failed: tool 'note_write' was denied: the user denied it]"
                          and len(other.asked) == 1, f"another session asks again: {result!r}")
                ok("another HTTP session asks again")
                async with Client(url, mode="legacy") as client:
                    await plain_session(client, "deny")
                user = User()
                async with Client(url, mode="auto", elicitation_callback=user) as client:
                    await input_required_client(client, user)
                async with Client(url, mode="auto") as client:
                    await plain_session(client, "deny")
    print("all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main)
