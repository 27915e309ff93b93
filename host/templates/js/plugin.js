// {{name}}: a toolcell plugin in JavaScript. tools/build-js-plugin (in a toolcell source
// checkout) builds it with componentize-js, with the binding layer toolcell.js copied
// beside this file. ./test.sh builds, checks and calls it.
import { plugin, tool } from './toolcell.js';

export const guest = plugin([
  tool({
    name: '{{tool}}',
    description: 'Greets someone by name',
    schema: {
      type: 'object',
      properties: { name: { type: 'string', description: 'who to greet' } },
      required: ['name'],
    },
    // A handler is a generator function: `yield` an operation (ctx.sleep, ctx.httpGet)
    // to wait for it. What it returns is the tool's output; what it throws, the failure.
    *run(args, ctx) {
      return `Hello, ${args.name}!`;
    },
  }),
]);
