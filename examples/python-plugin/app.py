"""An example toolcell plugin in Python. Build it with

    TOOLCELL=target/release/toolcell tools/build-python-plugin examples/python-plugin python-example.wasm
"""

from toolcell_plugin import Content, Plugin

plugin = Plugin()


@plugin.tool(
    "py_greet",
    "Greets someone by name",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)
async def greet(args, ctx):
    greeting = (ctx.config() or {}).get("greeting", "Hello")
    return f"{greeting}, {args['name']}!"


@plugin.tool(
    "py_fetch_both",
    "Fetches two URLs at the same time",
    {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    },
)
async def fetch_both(args, ctx):
    first = ctx.spawn(_get(ctx, args["a"]))
    second = ctx.spawn(_get(ctx, args["b"]))
    a = await first
    b = await second
    return f"{a.status} {a.text()}; {b.status} {b.text()}"


async def _get(ctx, url):
    return await ctx.http_get(url)


@plugin.tool(
    "py_sleep",
    "Sleeps, then says so",
    {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]},
    no_prompt=True,
)
async def sleep(args, ctx):
    await ctx.sleep(args["ms"])
    return f"slept {args['ms']} ms"


@plugin.tool(
    "py_note_write",
    "Writes a note",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        "required": ["path", "text"],
    },
)
async def note_write(args, ctx):
    ctx.write_file(args["path"], args["text"])
    return f"wrote {len(args['text'].encode('utf-8'))} bytes"


@plugin.tool(
    "py_note_read",
    "Reads a note",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    no_prompt=True,
)
async def note_read(args, ctx):
    return ctx.read_text(args["path"])


@plugin.tool(
    "py_count_words",
    "Counts words",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    no_prompt=True,
    title="Count words",
    output_schema={
        "type": "object",
        "properties": {"words": {"type": "integer"}},
        "required": ["words"],
    },
)
async def count_words(args, ctx):
    words = args["text"].split()
    for done in range(1, len(words) + 1):
        ctx.progress(done, len(words))
    return {"words": len(words)}


@plugin.tool("py_show", "Shows a picture and where its data is", no_prompt=True)
async def show(args, ctx):
    return Content([
        {"type": "text", "text": "a picture:"},
        {"type": "image", "data": bytes([0x89, 0x50, 0x4E, 0x47, 0xFF]), "mime_type": "image/png"},
        {"type": "resource_link", "uri": "file:///data.csv", "name": "data.csv"},
    ])


@plugin.tool("py_ask", "Asks the user for a name", no_prompt=True)
async def ask(args, ctx):
    answer = await ctx.ask("Who are you?", {
        "type": "object",
        "properties": {"name": {"type": "string", "default": "nobody"}},
        "required": ["name"],
    })
    return f"hello {answer.content['name']}" if answer.action == "accepted" else answer.action


Guest = plugin.guest_class()
