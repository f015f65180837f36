/** Why a listed tool is not offered to the model. */
export type LeftOutReason = 'tool_limit' | 'schema_too_large' | 'name_not_accepted';

export interface LeftOutTool {
  name: string;
  reason: LeftOutReason;
}

/** What selection reads of a listed tool: its name and its input schema. */
export interface ListedTool {
  name: string;
  inputSchema?: unknown;
}

export interface ToolLimits {
  /** MCP_MAX_TOOLS: tools one chat offers, over all the user's servers (shared round-robin). */
  maxTools: number;
  /** MCP_TOOL_SCHEMA_MAX_CHARS: longest input schema (as JSON) a tool may have. */
  schemaMaxChars: number;
}

export interface ServerSelection<T extends ListedTool> {
  offered: T[];
  leftOut: LeftOutTool[];
}

/** Tool names the model providers accept (OpenAI's rule), once prefixed `<server>__`. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Chooses the tools a chat offers the model. Order is by server name, then by tool name
 * (code points), never the order a server lists them in: the same tools are chosen every
 * chat, whatever order a server answers in. A tool whose name a provider refuses or whose
 * schema is too long is left out without taking a place. The `maxTools` places are dealt
 * round-robin over the servers (sharePlaces), so a server with hundreds of tools cannot
 * crowd out the others; each server offers its first tools by name up to its share, and the
 * rest are left out. The chat and the status routes both call this, so what the status says
 * is what the model gets.
 */
export function selectTools<T extends ListedTool>(
  servers: { name: string; tools: T[] }[],
  limits: ToolLimits,
): Map<string, ServerSelection<T>> {
  const judged = [...servers]
    .sort((a, b) => compare(a.name, b.name))
    .map((server) => ({
      name: server.name,
      tools: [...server.tools]
        .sort((a, b) => compare(a.name, b.name))
        .map((tool) => ({ tool, refused: refusal(server.name, tool, limits) })),
    }));
  const shares = sharePlaces(
    judged.map((server) => server.tools.filter((t) => !t.refused).length),
    limits.maxTools,
  );
  const chosen = new Map<string, ServerSelection<T>>();
  judged.forEach((server, index) => {
    const selection: ServerSelection<T> = { offered: [], leftOut: [] };
    chosen.set(server.name, selection);
    let room = shares[index] ?? 0;
    for (const { tool, refused } of server.tools) {
      const reason = refused ?? (room <= 0 ? 'tool_limit' : undefined);
      if (reason) {
        selection.leftOut.push({ name: tool.name, reason });
      } else {
        selection.offered.push(tool);
        room -= 1;
      }
    }
  });
  return chosen;
}

/**
 * How many of `places` each server gets, given how many tools each could offer (`wants`, in
 * server-name order): one place to each server in turn, round after round, skipping a server
 * once all its tools have a place. So every server gets the floor or the ceiling of an even
 * share, a share a server does not use goes round to the others, and when the places do not
 * divide evenly the servers first by name get the one more.
 */
export function sharePlaces(wants: number[], places: number): number[] {
  const shares = wants.map(() => 0);
  let room = places;
  let open = wants.flatMap((want, index) => (want > 0 ? [index] : []));
  while (room > 0 && open.length > 0) {
    for (const index of open.slice(0, room)) shares[index] = (shares[index] ?? 0) + 1;
    room -= Math.min(room, open.length);
    open = open.filter((index) => (shares[index] ?? 0) < (wants[index] ?? 0));
  }
  return shares;
}

/** Why a tool cannot be offered at all, whatever the places left; undefined when it can. */
function refusal(server: string, tool: ListedTool, limits: ToolLimits): LeftOutReason | undefined {
  if (!TOOL_NAME.test(`${server}__${tool.name}`)) return 'name_not_accepted';
  if (schemaChars(tool.inputSchema) > limits.schemaMaxChars) return 'schema_too_large';
  return undefined;
}

/** Left-out tools counted by reason, for logs (counts, never schemas). */
export function countReasons(leftOut: LeftOutTool[]): Partial<Record<LeftOutReason, number>> {
  const counts: Partial<Record<LeftOutReason, number>> = {};
  for (const { reason } of leftOut) counts[reason] = (counts[reason] ?? 0) + 1;
  return counts;
}

/** A connection's schemas are the same objects chat after chat: measured once. */
const measured = new WeakMap<object, number>();

function schemaChars(schema: unknown): number {
  if (!schema || typeof schema !== 'object') return JSON.stringify(schema ?? {}).length;
  let chars = measured.get(schema);
  if (chars === undefined) {
    chars = JSON.stringify(schema).length;
    measured.set(schema, chars);
  }
  return chars;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
