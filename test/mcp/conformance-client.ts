import pino from 'pino';
import { McpConnections } from '../../src/mcp/mcp-connections.ts';
import { callMcpTool } from '../../src/mcp/mcp-tools.ts';

/**
 * Parley's MCP client code as a program for the conformance suite's client scenarios
 * (`conformance client --command "node test/mcp/conformance-client.ts" --scenario <name>`):
 * the suite appends its mock server's URL. Connects the way a user's chat does (Streamable
 * HTTP, Parley's connection pool), lists the tools, and calls each with arguments made from
 * its input schema, with Parley's call limits. Exits 1 on a failure of its own.
 */
const url = process.argv.at(-1);
if (!url || !URL.canParse(url)) {
  process.stderr.write('usage: conformance-client.ts <server url>\n');
  process.exit(2);
}
const logger = pino({ level: 'warn' }, pino.destination(2));
const connections = new McpConnections({
  connectTimeoutMs: 15_000,
  idleMs: 60_000,
  logger,
  onFailure: () => {},
  onRefused: () => {},
  onListing: () => {},
});
const limits = { callTimeoutMs: 15_000, callMaxMs: 30_000, resultMaxChars: 20_000 };
let code = 0;
try {
  const connection = await connections.get(
    {
      id: 'conformance',
      name: 'conformance',
      transport: 'http',
      command: null,
      args: [],
      env: {},
      url,
      sharedProcess: false,
    },
    'conformance-user',
    undefined,
  );
  for (const tool of connection.tools) {
    const result = await callMcpTool(
      connection,
      tool.name,
      argumentsFor(tool.inputSchema),
      limits,
      AbortSignal.timeout(30_000),
    );
    process.stdout.write(`${tool.name}: ${result.text}\n`);
  }
} catch (error) {
  process.stderr.write(`conformance client failed: ${String(error)}\n`);
  code = 1;
} finally {
  await connections.closeAll();
}
process.exit(code);

/** Plausible arguments: numbers 1, 2, 3…, strings "test", booleans true, for required ones. */
function argumentsFor(schema: { properties?: Record<string, unknown>; required?: string[] }) {
  const args: Record<string, unknown> = {};
  let n = 0;
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const type = (property as { type?: string }).type;
    if (type === 'number' || type === 'integer') args[name] = ++n;
    else if (type === 'boolean') args[name] = true;
    else if (type === 'string') args[name] = 'test';
  }
  return args;
}
