// toolcell's JavaScript binding layer: tools with generator handlers on top of the
// toolcell:plugin step protocol. Built into a component with componentize-js (see
// tools/build-js-plugin).
//
//   import { plugin, tool } from './toolcell.js';
//   export const guest = plugin([
//     tool({
//       name: 'js_fetch', description: 'Fetches a URL',
//       schema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
//       *run(args, ctx) {
//         const response = yield ctx.httpGet(args.url);   // yield waits, like await
//         return `${response.status} ${response.text()}`;
//       },
//     }),
//   ]);
//
// Handlers are generator functions: `yield` an operation (ctx.sleep, ctx.httpGet,
// ctx.http, ctx.ask) or a task (ctx.spawn) to wait for its result. A handler returns a
// string, a JSON value, or `content([...parts])` for a result of several parts. Promises cannot be used:
// their continuations run as microtasks, after a step has already returned to the host,
// while a generator is resumed by this layer inside the step, when the host delivers
// the outcome. The host never blocks on the plugin, and the plugin never sees an
// operation id.

import * as host from 'toolcell:plugin/host@0.3.0';

let pluginName = '';
let debugLog = false;

const GeneratorFunction = Object.getPrototypeOf(function* () {}).constructor;
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

/** Describes one tool. `run` is a generator function (args, ctx). A tool with an
 * `outputSchema` (an object schema) returns a value the schema accepts: the host checks
 * it and MCP clients get it as structured content. A tool that breaks a
 * rule is refused here, when the module registers it, which is when the plugin is built
 * (componentize-js runs the module's top level then): the build stops with the reason. */
export function tool(spec) {
  if (typeof spec.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(spec.name)) {
    throw new Error(`tool name ${JSON.stringify(spec.name)} must be 1 to 64 letters, digits, '_' or '-'`);
  }
  if (typeof spec.run !== 'function') {
    throw new Error(`tool '${spec.name}' has no run function`);
  }
  if (!(spec.run instanceof GeneratorFunction)) {
    const what = spec.run instanceof AsyncFunction ? 'an async function' : 'a plain function';
    throw new Error(
      `tool '${spec.name}': run is ${what}; it must be a generator function ` +
        '(*run(args, ctx) { ... } or function* (args, ctx) { ... }) that yields operations ' +
        'instead of awaiting them: promise continuations would run after the step returns',
    );
  }
  return spec;
}

/** An operation started in the host, to be yielded. */
class Operation {
  constructor(op, convert) {
    this.op = op;
    this.convert = convert;
  }
}

/** A spawned task, to be yielded for its result. */
class Task {
  constructor(call, id) {
    this.call = call;
    this.id = id;
  }
}

/** Raised when the host refuses an operation or an HTTP exchange fails. */
export class ToolError extends Error {}

/** A result of several parts, in order, for a handler to return. Each part is
 * { type: 'text', text }, { type: 'image' | 'audio', data: Uint8Array, mimeType },
 * { type: 'resource_link', uri, name, mimeType? } or
 * { type: 'resource', uri, mimeType?, text | data }. */
export function content(parts) {
  if (!Array.isArray(parts) || parts.length === 0) {
    throw new ToolError('content takes a non-empty array of parts');
  }
  return new Content(parts.map(contentPart));
}

class Content {
  constructor(parts) {
    this.parts = parts;
  }
}

function bytes(value, what) {
  if (typeof value === 'string') return new TextEncoder().encode(value);
  if (value instanceof Uint8Array) return value;
  throw new ToolError(`${what} must be a Uint8Array or a string`);
}

function contentPart(part, index) {
  const where = `part ${index + 1}`;
  const need = (key) => {
    if (typeof part[key] !== 'string') throw new ToolError(`${where} (${part.type}) needs ${key}, a string`);
    return part[key];
  };
  switch (part && part.type) {
    case 'text':
      return { tag: 'text', val: need('text') };
    case 'image':
    case 'audio':
      return { tag: part.type, val: { data: bytes(part.data, `${where}: data`), mimeType: need('mimeType') } };
    case 'resource_link':
      return { tag: 'resource-link', val: { uri: need('uri'), name: need('name'), mimeType: part.mimeType } };
    case 'resource': {
      const contents =
        part.text !== undefined
          ? { tag: 'text', val: need('text') }
          : { tag: 'blob', val: bytes(part.data, `${where}: data`) };
      return { tag: 'resource', val: { uri: need('uri'), mimeType: part.mimeType, contents } };
    }
    default:
      throw new ToolError(`${where}: unknown type ${JSON.stringify(part && part.type)}`);
  }
}

function answerOutcome(outcome) {
  if (outcome.tag !== 'answered') throw new ToolError('the host answered a question with something else');
  const answer = outcome.val;
  if (answer.tag === 'accepted') return { action: 'accepted', content: JSON.parse(answer.val) };
  if (answer.tag === 'unanswered') throw new ToolError(answer.val);
  return { action: answer.tag };
}

function hostCall(fn) {
  try {
    return fn();
  } catch (error) {
    throw new ToolError(error && error.payload !== undefined ? String(error.payload) : String(error));
  }
}

function response(value) {
  return {
    status: value.status,
    headers: value.headers,
    body: value.body,
    text() {
      return new TextDecoder().decode(this.body);
    },
    json() {
      return JSON.parse(this.text());
    },
  };
}

function httpOutcome(outcome) {
  if (outcome.tag === 'http-response') return response(outcome.val);
  if (outcome.tag === 'http-error') throw new ToolError(outcome.val);
  throw new ToolError('the host answered an HTTP request with a timer');
}

function timerOutcome(outcome) {
  if (outcome.tag !== 'timer-fired') throw new ToolError('the host answered a timer with something else');
  return undefined;
}

/** What a handler can do while it runs. */
class Ctx {
  constructor(call, toolName, rawArgs) {
    this.call = call;
    this.tool = toolName;
    this.rawArgs = rawArgs;
    this.plugin = pluginName;
  }

  /** An HTTP request: { method, url, headers: [[name, value]], body: Uint8Array|string }. */
  http(request) {
    const body = typeof request.body === 'string' ? new TextEncoder().encode(request.body) : request.body;
    const op = hostCall(() =>
      host.httpStart(this.call, {
        method: request.method || 'GET',
        url: request.url,
        headers: request.headers || [],
        body,
      }),
    );
    return new Operation(op, httpOutcome);
  }

  /** A GET of `url`. */
  httpGet(url) {
    return this.http({ method: 'GET', url });
  }

  /** Waits `ms` milliseconds. */
  sleep(ms) {
    if (!(ms >= 0)) throw new ToolError(`sleep expects a non-negative number of milliseconds, got ${ms}`);
    const op = hostCall(() => host.timerStart(this.call, BigInt(Math.ceil(ms))));
    return new Operation(op, timerOutcome);
  }

  /** Runs a generator (e.g. `(function* () { ... })()`) as a child task; yield the
   * returned task to wait for its result. Child tasks end with their invocation. */
  spawn(generator) {
    const call = calls.get(this.call);
    if (!call) throw new ToolError('the invocation has ended');
    return call.add(generator);
  }

  /** Reads a whole file below the granted root (Uint8Array). */
  readFile(path) {
    return hostCall(() => host.readFile(path));
  }

  /** Reads a whole UTF-8 text file below the granted root. */
  readText(path) {
    return new TextDecoder().decode(this.readFile(path));
  }

  /** Replaces (or creates) a whole file below the granted root. */
  writeFile(path, content) {
    const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;
    hostCall(() => host.writeFile(path, bytes));
  }

  /** The absolute path of the plugin's file root, which relative paths are taken from:
   * its own directory unless the user granted a root (created on its first write);
   * undefined when the plugin may not use files. */
  dataDir() {
    return host.config('toolcell:data_dir');
  }

  /** The user's configuration: [tools.PLUGIN-ID], else [tools.TOOL]; undefined if none. */
  config() {
    const text = host.config(pluginName) ?? host.config(this.tool);
    return text === undefined ? undefined : JSON.parse(text);
  }

  /** Reports how far the call has come: `done` units of work, out of `total` when
   * known. The host forwards the latest report to the caller, at most one every 100 ms;
   * a ToolError says which value is out of range. */
  progress(done, total, message) {
    hostCall(() =>
      host.progress(
        this.call,
        Number(done),
        total === undefined || total === null ? undefined : Number(total),
        message === undefined || message === null ? undefined : String(message),
      ),
    );
  }

  /** Asks the user of the caller: `message`, and the form of the answer (a JSON
   * Schema object of flat string, number, integer, boolean or enum fields, with
   * optional defaults). Yield it: the result is { action: 'accepted', content },
   * { action: 'declined' } or { action: 'cancelled' }; a ToolError says why nobody
   * could answer. The wait does not count against the call's deadline. */
  ask(message, schema) {
    const op = hostCall(() =>
      host.askStart(this.call, { message: String(message), schema: JSON.stringify(schema) }),
    );
    return new Operation(op, answerOutcome);
  }

  /** Appends a line to the debug log (nothing when the user did not enable it). */
  log(message) {
    if (debugLog) host.log(String(message));
  }
}

/** One invocation: its main task and the tasks it spawned, run step by step. */
class Call {
  constructor(id, deadline) {
    this.id = id;
    this.deadline = deadline;
    this.tasks = new Map();
    this.nextTask = 0;
    this.ready = [];
    this.waitingOn = new Map(); // op id (as string) -> task id
    this.result = undefined;
  }

  add(generator) {
    if (typeof generator === 'function') generator = generator();
    if (!generator || typeof generator.next !== 'function') {
      throw new ToolError('spawn takes a generator (or a generator function)');
    }
    const id = this.nextTask++;
    this.tasks.set(id, { generator, done: false, value: undefined, error: undefined, joiners: [] });
    this.ready.push({ id, value: undefined, error: undefined });
    return new Task(this.id, id);
  }

  deliver(op, outcome) {
    const key = String(op);
    const entry = this.waitingOn.get(key);
    if (!entry) return;
    this.waitingOn.delete(key);
    try {
      this.ready.push({ id: entry.task, value: entry.convert(outcome), error: undefined });
    } catch (error) {
      this.ready.push({ id: entry.task, value: undefined, error });
    }
  }

  /** Runs ready tasks until none is ready or the main task has ended. */
  run() {
    while (this.ready.length > 0 && this.result === undefined) {
      const { id, value, error } = this.ready.shift();
      const task = this.tasks.get(id);
      if (!task || task.done) continue;
      let step;
      try {
        step = error !== undefined ? task.generator.throw(error) : task.generator.next(value);
      } catch (thrown) {
        this.finish(id, task, undefined, thrown);
        continue;
      }
      if (step.done) {
        this.finish(id, task, step.value, undefined);
      } else {
        this.wait(id, step.value);
      }
      if (host.now() > this.deadline) return { tag: 'timed-out' };
    }
    if (this.result !== undefined) return this.result;
    if (this.ready.length === 0 && this.waitingOn.size === 0) {
      return { tag: 'broke-rule', val: 'the handler waits for something that can never happen (no host operation is pending)' };
    }
    return { tag: 'pending' };
  }

  wait(id, waitable) {
    if (waitable instanceof Operation) {
      this.waitingOn.set(String(waitable.op), { task: id, convert: waitable.convert });
    } else if (waitable instanceof Task && waitable.call === this.id) {
      const target = this.tasks.get(waitable.id);
      if (target.done) {
        this.ready.push({ id, value: target.value, error: target.error });
      } else {
        target.joiners.push(id);
      }
    } else {
      this.ready.push({
        id,
        value: undefined,
        error: new ToolError('a handler may only yield ctx.sleep, ctx.http, ctx.httpGet, ctx.ask or a task of its own call'),
      });
    }
  }

  finish(id, task, value, error) {
    task.done = true;
    task.value = value;
    task.error = error;
    for (const joiner of task.joiners) this.ready.push({ id: joiner, value, error });
    task.joiners = [];
    if (id === 0) {
      if (error !== undefined) {
        this.result = { tag: 'failed', val: error instanceof Error ? error.message : String(error) };
      } else if (typeof value === 'string') {
        this.result = { tag: 'completed', val: value };
      } else if (value instanceof Content) {
        this.result = { tag: 'completed-content', val: value.parts };
      } else {
        this.result = { tag: 'completed', val: JSON.stringify(value ?? null) };
      }
    }
  }

  /** Cancels what the call still waits on. */
  end() {
    for (const op of this.waitingOn.keys()) host.cancelOp(BigInt(op));
    this.waitingOn.clear();
  }
}

const calls = new Map(); // call id (BigInt) -> Call

function settle(id, call) {
  const state = call.run();
  if (state.tag !== 'pending') {
    call.end();
    calls.delete(id);
  }
  return state;
}

/** The `guest` export of a plugin made of `tools`. */
export function plugin(tools) {
  const byName = new Map();
  for (const spec of tools) {
    if (byName.has(spec.name)) throw new Error(`tool '${spec.name}' is registered twice`);
    byName.set(spec.name, spec);
  }
  return {
    load(request) {
      pluginName = request.name;
      debugLog = request.debugLog;
      return tools.map((spec) => ({
        name: spec.name,
        description: spec.description || '',
        paramsSchema: spec.schema === undefined ? undefined : JSON.stringify(spec.schema),
        timeoutMs: spec.timeoutMs,
        noPrompt: Boolean(spec.noPrompt),
        hidden: Boolean(spec.hidden),
        title: spec.title,
        outputSchema: spec.outputSchema === undefined ? undefined : JSON.stringify(spec.outputSchema),
        taskSupport: spec.taskSupport || 'optional',
      }));
    },

    start(callId, toolName, argsJson, deadline) {
      const spec = byName.get(toolName);
      if (!spec) return { tag: 'failed', val: `the plugin has no tool named '${toolName}'` };
      let args;
      try {
        args = JSON.parse(argsJson);
      } catch (error) {
        return { tag: 'failed', val: `invalid JSON arguments: ${error.message}` };
      }
      const call = new Call(callId, deadline);
      calls.set(callId, call);
      call.add(spec.run(args, new Ctx(callId, toolName, argsJson)));
      return settle(callId, call);
    },

    resume(callId, op, outcome, deadline) {
      const call = calls.get(callId);
      if (!call) return { tag: 'failed', val: 'the invocation is unknown to the plugin' };
      call.deadline = deadline;
      call.deliver(op, outcome);
      return settle(callId, call);
    },

    cancel(callId, _reason) {
      const call = calls.get(callId);
      if (call) {
        call.end();
        calls.delete(callId);
      }
    },
  };
}
