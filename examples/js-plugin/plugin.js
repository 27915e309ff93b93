// An example toolcell plugin in JavaScript. Build it with
//   TOOLCELL=target/release/toolcell tools/build-js-plugin examples/js-plugin js-example.wasm
import { content, plugin, tool } from './toolcell.js';

export const guest = plugin([
  tool({
    name: 'js_greet',
    description: 'Greets someone by name',
    schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    *run(args, ctx) {
      const greeting = (ctx.config() || {}).greeting || 'Hello';
      return `${greeting}, ${args.name}!`;
    },
  }),
  tool({
    name: 'js_fetch_both',
    description: 'Fetches two URLs at the same time',
    schema: {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string' } },
      required: ['a', 'b'],
    },
    *run(args, ctx) {
      const fetch = (url) => function* () {
        return yield ctx.httpGet(url);
      };
      const first = ctx.spawn(fetch(args.a));
      const second = ctx.spawn(fetch(args.b));
      const a = yield first;
      const b = yield second;
      return `${a.status} ${a.text()}; ${b.status} ${b.text()}`;
    },
  }),
  tool({
    name: 'js_sleep',
    description: 'Sleeps, then says so',
    schema: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] },
    noPrompt: true,
    *run(args, ctx) {
      yield ctx.sleep(args.ms);
      return `slept ${args.ms} ms`;
    },
  }),
  tool({
    name: 'js_note_write',
    description: 'Writes a note',
    schema: {
      type: 'object',
      properties: { path: { type: 'string' }, text: { type: 'string' } },
      required: ['path', 'text'],
    },
    *run(args, ctx) {
      ctx.writeFile(args.path, args.text);
      return `wrote ${new TextEncoder().encode(args.text).length} bytes`;
    },
  }),
  tool({
    name: 'js_note_read',
    description: 'Reads a note',
    schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    noPrompt: true,
    *run(args, ctx) {
      return ctx.readText(args.path);
    },
  }),
  tool({
    name: 'js_count_words',
    title: 'Count words',
    description: 'Counts words',
    schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
    noPrompt: true,
    *run(args, ctx) {
      const words = args.text.split(/\s+/).filter((word) => word.length > 0);
      words.forEach((_, index) => ctx.progress(index + 1, words.length));
      return { words: words.length };
    },
  }),
  tool({
    name: 'js_show',
    description: 'Shows a picture and where its data is',
    noPrompt: true,
    *run(_args, _ctx) {
      return content([
        { type: 'text', text: 'a picture:' },
        { type: 'image', data: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff]), mimeType: 'image/png' },
        { type: 'resource_link', uri: 'file:///data.csv', name: 'data.csv' },
      ]);
    },
  }),
  tool({
    name: 'js_ask',
    description: 'Asks the user for a name',
    noPrompt: true,
    *run(_args, ctx) {
      const answer = yield ctx.ask('Who are you?', {
        type: 'object',
        properties: { name: { type: 'string', default: 'nobody' } },
        required: ['name'],
      });
      return answer.action === 'accepted' ? `hello ${answer.content.name}` : answer.action;
    },
  }),
]);
