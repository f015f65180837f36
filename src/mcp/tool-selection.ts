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
  /** MCP_MAX_TOOLS: tools one chat offers, over all the user's servers. */
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
 * schema is too long is left out without taking a place; past `maxTools`, the rest are left
 * out. The chat and the status routes both call this, so what the status says is what the
 * model gets.
 */
export function selectTools<T extends ListedTool>(
  servers: { name: string; tools: T[] }[],
  limits: ToolLimits,
): Map<string, ServerSelection<T>> {
  const chosen = new Map<string, ServerSelection<T>>();
  let room = limits.maxTools;
  for (const server of [...servers].sort((a, b) => compare(a.name, b.name))) {
    const selection: ServerSelection<T> = { offered: [], leftOut: [] };
    chosen.set(server.name, selection);
    for (const tool of [...server.tools].sort((a, b) => compare(a.name, b.name))) {
      const reason = !TOOL_NAME.test(`${server.name}__${tool.name}`)
        ? 'name_not_accepted'
        : schemaChars(tool.inputSchema) > limits.schemaMaxChars
          ? 'schema_too_large'
          : room <= 0
            ? 'tool_limit'
            : undefined;
      if (reason) {
        selection.leftOut.push({ name: tool.name, reason });
      } else {
        selection.offered.push(tool);
        room -= 1;
      }
    }
  }
  return chosen;
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
