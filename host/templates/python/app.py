"""{{name}}: a toolcell plugin in Python. tools/build-python-plugin (in a toolcell source
checkout) builds it with componentize-py, with the binding layer toolcell_plugin.py on
the path. ./test.sh builds, checks and calls it."""

from toolcell_plugin import Plugin

plugin = Plugin()


@plugin.tool(
    "{{tool}}",
    "Greets someone by name",
    {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "who to greet"}},
        "required": ["name"],
    },
)
async def greet(args, ctx):
    # A handler is an `async def`: `await` an operation (ctx.sleep, ctx.http_get) to wait
    # for it. What it returns is the tool's output; what it raises, the failure.
    return f"Hello, {args['name']}!"


# componentize-py exports this class: the build script expects the name `Guest`.
Guest = plugin.guest_class()
