import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * The MCP conformance suite (@modelcontextprotocol/conformance 0.1.16) against Parley's MCP
 * client: each scenario starts its mock server and runs test/mcp/conformance-client.ts (Parley's
 * connection and call code) with that server's URL. A scenario fails the run (exit 1) when any
 * of its checks fails. Left out: the elicitation scenario (Parley's client offers no
 * elicitation) and the auth/* scenarios (Parley sends a user's stored header; it does not run
 * OAuth flows).
 */
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORMANCE = fileURLToPath(
  import.meta.resolve('@modelcontextprotocol/conformance/dist/index.js'),
);

const SCENARIOS: Record<string, string[]> = {
  initialize: ['[mcp-client-initialization] SUCCESS'],
  tools_call: ['[tool-add-numbers ] SUCCESS'],
  'sse-retry': [
    '[client-sse-graceful-reconnect] SUCCESS',
    '[client-sse-retry-timing      ] SUCCESS',
    '[client-sse-last-event-id     ] SUCCESS',
  ],
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: the suite colours its output
const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '');

describe('the MCP conformance client scenarios against Parley’s client', () => {
  for (const [scenario, checks] of Object.entries(SCENARIOS)) {
    it(`passes ${scenario}`, async () => {
      const { stdout, stderr } = await run(
        process.execPath,
        [
          CONFORMANCE,
          'client',
          '--command',
          `${process.execPath} test/mcp/conformance-client.ts`,
          '--scenario',
          scenario,
        ],
        { cwd: ROOT, timeout: 90_000 },
      );
      const output = plain(stdout + stderr);
      expect(output).toContain('OVERALL: PASSED');
      for (const check of checks) expect(output).toContain(check);
    }, 120_000);
  }
});
