"""A Lua plugin returns an image (and the other content parts) and asks its user a
question, through `toolcell serve` and the official MCP Python SDK's client.

Run by host/tests/mcp.rs:

    python3 tests/mcp/show_and_ask.py --toolcell BIN --transport stdio|http --mode legacy|auto

Content parts are checked on both protocol modes. The question is answered through
form elicitation: by a server-to-client request in `legacy` sessions (protocol
2025-11-25), and by input-required results in `auto` mode (protocol 2026-07-28, the
SDK's client driving the rounds); a client that cannot elicit tells the plugin why
nobody answered.
"""

from __future__ import annotations

import base64
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from client import HANG, check, http_server, ok, options_parser, text_of

# The first bytes of a PNG file and a few bytes that are not UTF-8: the image must
# arrive byte for byte.
IMAGE = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0xFF, 0xFE, 0x80])

PLUGIN = r"""
local png = "\137PNG\r\n\26\n\0\255\254\128"

clm.tool_register("chart", {
  description = "Draws a chart",
  invoke = function(_, ctx)
    ctx:complete_content({
      { type = "text", text = "the chart:" },
      { type = "image", data = png, mime_type = "image/png" },
      { type = "resource_link", uri = "file:///data/sales.csv", name = "sales.csv", mime_type = "text/csv" },
      { type = "resource", uri = "note://summary", text = "up 3%", mime_type = "text/plain" },
      { type = "audio", data = "RIFF", mime_type = "audio/wav" },
    })
  end,
})

local form = {
  type = "object",
  properties = {
    color = { type = "string", title = "Color", enum = { "red", "blue" }, default = "red" },
    count = { type = "integer", minimum = 1, default = 1 },
  },
  required = { "color" },
}

clm.tool_register("pick", {
  description = "Asks for a color",
  timeout_ms = 300,
  invoke = function(_, ctx)
    local answer, why = ctx:ask("Which color?", form)
    if not answer then
      return ctx:complete("no answer: " .. why)
    end
    ctx:complete("you chose " .. answer.color .. " x" .. math.tointeger(answer.count or 1))
  end,
})
"""


class User:
    """The client's user: answers each elicitation with the next scripted answer,
    after `delay` seconds."""

    def __init__(self) -> None:
        self.answers: list[tuple[types.ElicitResult, float]] = []
        self.asked: list[types.ElicitRequestFormParams] = []

    def will(self, action: str, content: dict[str, Any] | None = None, delay: float = 0.0) -> None:
        self.answers.append((types.ElicitResult(action=action, content=content), delay))

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        check(isinstance(params, types.ElicitRequestFormParams), f"a form elicitation: {params!r}")
        self.asked.append(params)
        check(bool(self.answers), f"an unexpected question: {params.message!r}")
        answer, delay = self.answers.pop(0)
        await anyio.sleep(delay)
        return answer


async def call(client: Client, tool: str) -> types.CallToolResult:
    with anyio.fail_after(HANG):
        return await client.call_tool(tool, {})


async def shows(client: Client) -> None:
    result = await call(client, "chart")
    check(result.is_error is not True, f"the chart completes: {result!r}")
    blocks = result.content
    check([block.type for block in blocks] == ["text", "image", "resource_link", "resource", "audio"],
          f"five parts in order: {blocks!r}")
    text, image, link, resource, audio = blocks
    check(text.text == "the chart:", f"the text part: {text!r}")
    check(image.mime_type == "image/png" and base64.b64decode(image.data) == IMAGE,
          f"the image arrives byte for byte: {image!r}")
    check(str(link.uri) == "file:///data/sales.csv" and link.name == "sales.csv"
          and link.mime_type == "text/csv", f"the resource link: {link!r}")
    check(str(resource.resource.uri) == "note://summary" and resource.resource.text == "up 3%",
          f"the embedded resource: {resource!r}")
    check(audio.mime_type == "audio/wav" and base64.b64decode(audio.data) == b"RIFF",
          f"the audio part: {audio!r}")
    ok("a Lua plugin's image, audio, resource link and embedded resource arrive as MCP content")


async def asks(client: Client, user: User) -> None:
    # The user takes longer than the tool's whole 300 ms deadline: the wait does not
    # count against it.
    user.will("accept", {"color": "blue", "count": 3}, delay=0.6)
    started = time.monotonic()
    result = await call(client, "pick")
    check(text_of(result) == "you chose blue x3", f"the answer reaches the plugin: {result!r}")
    check(time.monotonic() - started >= 0.6, "the call waited for the user")
    asked = user.asked[-1]
    check(asked.message == "Which color?", f"the plugin's message: {asked.message!r}")
    schema = asked.requested_schema
    check(schema["properties"]["color"].get("default") == "red"
          and schema["properties"]["color"].get("enum") == ["red", "blue"]
          and schema.get("required") == ["color"],
          f"the form keeps its choices, defaults and required fields: {schema!r}")
    ok("ctx:ask reaches the client's user by elicitation; the wait is outside the deadline")

    user.will("decline")
    check(text_of(await call(client, "pick")) == "no answer: declined", "declined")
    user.will("cancel")
    check(text_of(await call(client, "pick")) == "no answer: cancelled", "cancelled")
    ok("a declined or cancelled question tells the plugin which")

    user.will("accept", {"color": "green"})
    reply = text_of(await call(client, "pick"))
    check(reply.startswith("no answer: the answer does not fit the form"),
          f"an answer the form does not accept never reaches the plugin: {reply!r}")
    ok("an answer that breaks the form is refused by the host")


async def cannot_ask(client: Client) -> None:
    reply = text_of(await call(client, "pick"))
    check(reply.startswith("no answer: the MCP client cannot ask its user"),
          f"a client without elicitation: {reply!r}")
    ok("a client that cannot elicit leaves the question unanswered, saying why")


async def main() -> None:
    parser = options_parser(__doc__)
    parser.add_argument("--mode", choices=["legacy", "auto"], required=True)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as plugins_dir, tempfile.TemporaryDirectory() as root:
        plugins = Path(plugins_dir)
        (plugins / "show.lua").write_text(PLUGIN)
        env = dict(os.environ)
        base = ["serve", "--plugins", str(plugins), "--root", root]

        async def sessions(server: Any) -> None:
            user = User()
            async with Client(server, mode=options.mode, elicitation_callback=user) as client:
                await shows(client)
                await asks(client, user)
            async with Client(server, mode=options.mode) as client:
                await cannot_ask(client)

        if options.transport == "stdio":
            await sessions(StdioServerParameters(command=options.toolcell, args=base, env=env, cwd=root))
        else:
            async with http_server([options.toolcell, *base, "--http", "127.0.0.1:0"], env) as url:
                await sessions(url)
    print("all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main)
