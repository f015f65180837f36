import { describe, expect, it } from 'vitest';
import { selectTools, sharePlaces } from '../../src/mcp/tool-selection.ts';

/**
 * How MCP_MAX_TOOLS is shared over a user's servers (pure code, no server): round-robin in
 * server-name order, an unused share passed on, the same choice whatever order things come in.
 * test/mcp/mcp-tool-budget.test.ts shows the same rule end to end.
 */
describe('sharing MCP_MAX_TOOLS over servers', () => {
  it('gives each server the floor or ceiling of an even share, the first by name the ceiling', () => {
    expect(sharePlaces([50, 50, 50], 100)).toEqual([34, 33, 33]);
    expect(sharePlaces([500, 3], 100)).toEqual([97, 3]);
    expect(sharePlaces([1, 500, 500, 0], 10)).toEqual([1, 5, 4, 0]);
  });

  it('gives no more than a server can use, and nothing when there are no places', () => {
    expect(sharePlaces([2, 3], 100)).toEqual([2, 3]);
    expect(sharePlaces([20, 20], 0)).toEqual([0, 0]);
    expect(sharePlaces([], 100)).toEqual([]);
  });

  it('chooses the same tools whatever order the servers and their tools come in', () => {
    const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });
    const zeta = { name: 'zeta', tools: ['c', 'a', 'b'].map(tool) };
    const alpha = { name: 'alpha', tools: ['y', 'x', 'bad name!', 'w', 'v'].map(tool) };
    const limits = { maxTools: 4, schemaMaxChars: 1_000 };
    const offered = (servers: (typeof zeta)[]) =>
      [...selectTools(servers, limits)].map(([name, s]) => [name, s.offered.map((t) => t.name)]);
    expect(offered([zeta, alpha])).toEqual([
      ['alpha', ['v', 'w']],
      ['zeta', ['a', 'b']],
    ]);
    expect(offered([alpha, { ...zeta, tools: [...zeta.tools].reverse() }])).toEqual(
      offered([zeta, alpha]),
    );
    expect(selectTools([zeta, alpha], limits).get('alpha')?.leftOut).toEqual([
      { name: 'bad name!', reason: 'name_not_accepted' },
      { name: 'x', reason: 'tool_limit' },
      { name: 'y', reason: 'tool_limit' },
    ]);
  });
});
