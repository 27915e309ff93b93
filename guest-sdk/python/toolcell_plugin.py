"""toolcell's Python binding layer: tools with ``async`` handlers on top of the
toolcell:plugin step protocol. Built into a component with componentize-py (see
tools/build-python-plugin).

    from toolcell_plugin import Plugin

    plugin = Plugin()

    @plugin.tool("py_fetch", "Fetches a URL",
                 {"type": "object", "properties": {"url": {"type": "string"}}})
    async def fetch(args, ctx):
        response = await ctx.http_get(args["url"])
        return f"{response.status} {response.text()}"

    Guest = plugin.guest_class()

Handlers are coroutines driven by this module, not by asyncio: each ``await`` of an
operation (ctx.sleep, ctx.http, ctx.http_get) or of a task (ctx.spawn) suspends the
coroutine until the host delivers the outcome, inside one of the host's steps. The host
never blocks on the plugin, and the plugin never sees an operation id.
"""

import inspect
import json
import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host, types

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolError(Exception):
    """The host refused an operation, or an HTTP exchange failed."""


def _host_call(function, *args):
    try:
        return function(*args)
    except Err as error:
        raise ToolError(str(error.value)) from None


class Response:
    """A complete HTTP response, whatever its status."""

    def __init__(self, value):
        self.status = value.status
        self.headers = list(value.headers)
        self.body = bytes(value.body)

    def text(self):
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        return json.loads(self.body)


class _Operation:
    """An operation started in the host; awaiting it waits for its outcome."""

    def __init__(self, op, convert):
        self.op = op
        self.convert = convert

    def __await__(self):
        outcome = yield self
        return self.convert(outcome)


def _http_outcome(outcome):
    if isinstance(outcome, types.OpOutcome_HttpResponse):
        return Response(outcome.value)
    if isinstance(outcome, types.OpOutcome_HttpError):
        raise ToolError(outcome.value)
    raise ToolError("the host answered an HTTP request with a timer")


def _timer_outcome(outcome):
    if not isinstance(outcome, types.OpOutcome_TimerFired):
        raise ToolError("the host answered a timer with something else")


class Answer:
    """How the user answered ``ctx.ask``: ``action`` is "accepted" (``content`` holds
    the filled-in form, a dict), "declined" or "cancelled"."""

    def __init__(self, action, content=None):
        self.action = action
        self.content = content


def _answer_outcome(outcome):
    if not isinstance(outcome, types.OpOutcome_Answered):
        raise ToolError("the host answered a question with something else")
    answer = outcome.value
    if isinstance(answer, types.Answer_Accepted):
        return Answer("accepted", json.loads(answer.value))
    if isinstance(answer, types.Answer_Unanswered):
        raise ToolError(answer.value)
    return Answer("declined" if isinstance(answer, types.Answer_Declined) else "cancelled")


class Content:
    """A result of several parts, in order, for a handler to return. Each part is a
    dict: {"type": "text", "text": ...}, {"type": "image" | "audio", "data": bytes,
    "mime_type": ...}, {"type": "resource_link", "uri": ..., "name": ...,
    "mime_type": optional} or {"type": "resource", "uri": ..., "mime_type": optional,
    "text" or "data": ...}."""

    def __init__(self, parts):
        if not parts:
            raise ToolError("Content takes a non-empty list of parts")
        self.parts = [_content_part(index, part) for index, part in enumerate(parts)]


def _content_part(index, part):
    where = f"part {index + 1}"
    kind = part.get("type") if isinstance(part, dict) else None

    def need(key, expected=str):
        value = part.get(key)
        if isinstance(value, str) and expected is bytes:
            value = value.encode("utf-8")
        if not isinstance(value, expected):
            raise ToolError(f"{where} ({kind}) needs {key}, {expected.__name__}")
        return value

    if kind == "text":
        return types.ContentPart_Text(need("text"))
    if kind in ("image", "audio"):
        media = types.Media(data=need("data", bytes), mime_type=need("mime_type"))
        return types.ContentPart_Image(media) if kind == "image" else types.ContentPart_Audio(media)
    if kind == "resource_link":
        return types.ContentPart_ResourceLink(types.ResourceLink(
            uri=need("uri"), name=need("name"), mime_type=part.get("mime_type")))
    if kind == "resource":
        if "text" in part:
            contents = types.ResourceContents_Text(need("text"))
        else:
            contents = types.ResourceContents_Blob(need("data", bytes))
        return types.ContentPart_Resource(types.EmbeddedResource(
            uri=need("uri"), mime_type=part.get("mime_type"), contents=contents))
    raise ToolError(f"{where}: unknown type {kind!r}")


class Task:
    """A spawned task; awaiting it waits for its result."""

    def __init__(self, call, task_id):
        self.call = call
        self.task_id = task_id

    def __await__(self):
        return (yield self)


class Ctx:
    """What a handler can do while it runs."""

    def __init__(self, plugin, call_id, tool, raw_args):
        self._plugin = plugin
        self.call_id = call_id
        self.tool = tool
        self.raw_args = raw_args
        self.plugin = plugin.name

    def http(self, method, url, headers=(), body=None):
        """Starts an HTTP request; await the result for a Response."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        request = types.HttpRequest(method=method, url=url, headers=list(headers), body=body)
        op = _host_call(host.http_start, self.call_id, request)
        return _Operation(op, _http_outcome)

    def http_get(self, url):
        """A GET of ``url``; await it."""
        return self.http("GET", url)

    def sleep(self, ms):
        """Waits ``ms`` milliseconds; await it."""
        if not ms >= 0:
            raise ToolError(f"sleep expects a non-negative number of milliseconds, got {ms}")
        op = _host_call(host.timer_start, self.call_id, int(-(-ms // 1)))
        return _Operation(op, _timer_outcome)

    def ask(self, message, schema):
        """Asks the user of the caller: ``message``, and the form of the answer (a JSON
        Schema object of flat string, number, integer, boolean or enum fields, with
        optional defaults). Await it for an ``Answer``; a ToolError says why nobody could
        answer. The wait does not count against the call's deadline."""
        question = types.Question(message=str(message), schema=json.dumps(schema))
        op = _host_call(host.ask_start, self.call_id, question)
        return _Operation(op, _answer_outcome)

    def spawn(self, coroutine):
        """Runs a coroutine as a child task; await the returned task for its result.
        Child tasks end with their invocation."""
        call = self._plugin.calls.get(self.call_id)
        if call is None:
            raise ToolError("the invocation has ended")
        return call.add(coroutine)

    def read_file(self, path):
        """Reads a whole file below the granted root (bytes)."""
        return bytes(_host_call(host.read_file, path))

    def read_text(self, path):
        """Reads a whole UTF-8 text file below the granted root."""
        return self.read_file(path).decode("utf-8")

    def write_file(self, path, content):
        """Replaces (or creates) a whole file below the granted root."""
        if isinstance(content, str):
            content = content.encode("utf-8")
        _host_call(host.write_file, path, content)

    def data_dir(self):
        """The absolute path of the plugin's file root, which relative paths are taken
        from: its own directory unless the user granted a root (created on its first
        write); None when the plugin may not use files."""
        return host.config("toolcell:data_dir")

    def config(self):
        """The user's configuration: [tools.PLUGIN-ID], else [tools.TOOL]; None if none."""
        text = host.config(self._plugin.name)
        if text is None:
            text = host.config(self.tool)
        return None if text is None else json.loads(text)

    def progress(self, done, total=None, message=None):
        """Reports how far the call has come: ``done`` units of work, out of ``total``
        when known. The host forwards the latest report to the caller, at most one
        every 100 ms; ToolError says which value is out of range."""
        _host_call(
            host.progress,
            self.call_id,
            float(done),
            None if total is None else float(total),
            None if message is None else str(message),
        )

    def log(self, message):
        """Appends a line to the debug log (nothing when the user did not enable it)."""
        if self._plugin.debug_log:
            host.log(str(message))


class _TaskState:
    def __init__(self, coroutine):
        self.coroutine = coroutine
        self.done = False
        self.value = None
        self.error = None
        self.joiners = []


class _Call:
    """One invocation: its main task and the tasks it spawned, run step by step."""

    def __init__(self, call_id, deadline):
        self.call_id = call_id
        self.deadline = deadline
        self.tasks = {}
        self.next_task = 0
        self.ready = []
        self.waiting_on = {}  # op id -> (task id, convert)
        self.result = None

    def add(self, coroutine):
        task_id = self.next_task
        self.next_task += 1
        self.tasks[task_id] = _TaskState(coroutine)
        self.ready.append((task_id, None, None))
        return Task(self.call_id, task_id)

    def deliver(self, op, outcome):
        entry = self.waiting_on.pop(op, None)
        if entry is not None:
            task_id, _ = entry
            self.ready.append((task_id, outcome, None))

    def run(self):
        while self.ready and self.result is None:
            task_id, value, error = self.ready.pop(0)
            task = self.tasks.get(task_id)
            if task is None or task.done:
                continue
            try:
                if error is not None:
                    waitable = task.coroutine.throw(error)
                else:
                    waitable = task.coroutine.send(value)
            except StopIteration as stop:
                self._finish(task_id, task, stop.value, None)
                continue
            except Exception as raised:  # the handler's own failure
                self._finish(task_id, task, None, raised)
                continue
            self._wait(task_id, waitable)
            if host.now() > self.deadline:
                return types.CallState_TimedOut()
        if self.result is not None:
            return self.result
        if not self.ready and not self.waiting_on:
            return types.CallState_BrokeRule(
                "the handler waits for something that can never happen "
                "(no host operation is pending)"
            )
        return types.CallState_Pending()

    def _wait(self, task_id, waitable):
        if isinstance(waitable, _Operation):
            self.waiting_on[waitable.op] = (task_id, waitable.convert)
        elif isinstance(waitable, Task) and waitable.call == self.call_id:
            target = self.tasks[waitable.task_id]
            if target.done:
                self.ready.append((task_id, target.value, target.error))
            else:
                target.joiners.append(task_id)
        else:
            self.ready.append((task_id, None, ToolError(
                "a handler may only await ctx.sleep, ctx.http, ctx.http_get, ctx.ask or a task "
                "of its own call"
            )))

    def _finish(self, task_id, task, value, error):
        task.done = True
        task.value = value
        task.error = error
        for joiner in task.joiners:
            self.ready.append((joiner, value, error))
        task.joiners = []
        if task_id == 0:
            if error is not None:
                self.result = types.CallState_Failed(str(error) or type(error).__name__)
            elif isinstance(value, str):
                self.result = types.CallState_Completed(value)
            elif isinstance(value, Content):
                self.result = types.CallState_CompletedContent(value.parts)
            else:
                self.result = types.CallState_Completed(json.dumps(value))

    def end(self):
        for op in list(self.waiting_on):
            host.cancel_op(op)
        self.waiting_on.clear()
        for task in self.tasks.values():
            if not task.done:
                task.coroutine.close()


class Plugin:
    """The tools of a plugin; ``guest_class()`` is what componentize-py exports."""

    def __init__(self):
        self.tools = {}
        self.calls = {}
        self.name = ""
        self.debug_log = False

    def tool(self, name, description="", schema=None, timeout_ms=None, no_prompt=False,
             hidden=False, title=None, output_schema=None, task_support="optional"):
        """Registers an ``async def handler(args, ctx)`` as a tool. A tool with an
        ``output_schema`` (an object schema) returns a value the schema accepts: the
        host checks it and MCP clients get it as structured content. A handler may
        return a ``Content`` of several parts instead of text. ``task_support`` says
        whether calls may run as tasks: "optional", "required" or "forbidden"."""
        supports = {
            "optional": types.TaskSupport.OPTIONAL,
            "required": types.TaskSupport.REQUIRED,
            "forbidden": types.TaskSupport.FORBIDDEN,
        }
        if task_support not in supports:
            raise ValueError(f"tool {name!r}: task_support must be one of {', '.join(supports)}")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ValueError(f"tool name {name!r} must be 1 to 64 letters, digits, '_' or '-'")
        if name in self.tools:
            raise ValueError(f"tool {name!r} is registered twice")

        def register(handler):
            # Refused here, when the module registers the tool, which is when the plugin
            # is built (componentize-py imports the app then): the build stops with this.
            if not inspect.iscoroutinefunction(handler):
                kind = "a generator" if inspect.isgeneratorfunction(handler) else "a plain function"
                raise TypeError(
                    f"tool '{name}': the handler {getattr(handler, '__name__', handler)!s} is "
                    f"{kind}; it must be an `async def` function, which the binding layer "
                    "steps through its awaits"
                )
            self.tools[name] = (
                types.ToolSpec(
                    name=name,
                    description=description,
                    params_schema=None if schema is None else json.dumps(schema),
                    timeout_ms=timeout_ms,
                    no_prompt=no_prompt,
                    hidden=hidden,
                    title=title,
                    output_schema=None if output_schema is None else json.dumps(output_schema),
                    task_support=supports[task_support],
                ),
                handler,
            )
            return handler

        return register

    def _settle(self, call_id, call):
        state = call.run()
        if not isinstance(state, types.CallState_Pending):
            call.end()
            self.calls.pop(call_id, None)
        return state

    def guest_class(self):
        """The class implementing the ``guest`` export for this plugin."""
        plugin = self

        class Guest(exports.Guest):
            def load(self, request):
                plugin.name = request.name
                plugin.debug_log = request.debug_log
                return [spec for spec, _ in plugin.tools.values()]

            def start(self, call, tool, args_json, deadline):
                entry = plugin.tools.get(tool)
                if entry is None:
                    return types.CallState_Failed(f"the plugin has no tool named '{tool}'")
                try:
                    args = json.loads(args_json)
                except ValueError as error:
                    return types.CallState_Failed(f"invalid JSON arguments: {error}")
                running = _Call(call, deadline)
                plugin.calls[call] = running
                running.add(entry[1](args, Ctx(plugin, call, tool, args_json)))
                return plugin._settle(call, running)

            def resume(self, call, op, outcome, deadline):
                running = plugin.calls.get(call)
                if running is None:
                    return types.CallState_Failed("the invocation is unknown to the plugin")
                running.deadline = deadline
                running.deliver(op, outcome)
                return plugin._settle(call, running)

            def cancel(self, call, reason):
                running = plugin.calls.pop(call, None)
                if running is not None:
                    running.end()

        return Guest
