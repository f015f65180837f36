/**
 * What the built-in tools cost every request before the user says a word: each tool's
 * description plus its JSON Schema as the AI SDK sends it (bytes of JSON), and the total.
 * Tools that need a service are built with none: only their definitions are read.
 * `analyze_image` is left out: it is offered only with an image.
 *
 *   node bench/tool-schemas.ts
 */
import { asSchema, type Tool } from 'ai';
import { automationTools } from '../src/tools/automation-tools.ts';
import { documentTools } from '../src/tools/document-tools.ts';
import { graphTools } from '../src/tools/graph-tools.ts';
import { profileTools } from '../src/tools/profile-tools.ts';
import { reminderTools } from '../src/tools/reminder-tools.ts';
import { webSearchTools } from '../src/tools/web-search-tools.ts';
import { machineReport } from './support/machine.ts';

const none = {} as never;
const tools: Record<string, Tool> = {
  ...reminderTools(none),
  ...profileTools(none),
  ...automationTools(none),
  ...documentTools(none),
  ...webSearchTools(none),
  ...graphTools(none),
};

console.log('## tool-schemas\n');
console.log(`\`\`\`\n${machineReport()}\n\`\`\`\n`);
console.log('| tool | description + JSON Schema (bytes) |');
console.log('| --- | ---: |');
let total = 0;
for (const [name, tool] of Object.entries(tools)) {
  const schema = JSON.stringify(await asSchema(tool.inputSchema).jsonSchema);
  const description = typeof tool.description === 'string' ? tool.description : '';
  const bytes = Buffer.byteLength(schema) + Buffer.byteLength(description);
  total += bytes;
  console.log(`| ${name} | ${bytes} |`);
}
console.log(`| all | ${total} |`);
