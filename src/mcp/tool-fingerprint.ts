import { createHash } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** What of a tool's definition reaches the model or decides approval: what is fingerprinted. */
export interface ToolDefinition {
  name: string;
  description?: string | undefined;
  inputSchema: unknown;
  annotations?: unknown;
}

export function definitionOf(tool: Tool): ToolDefinition {
  return {
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    inputSchema: tool.inputSchema,
    ...(tool.annotations !== undefined && { annotations: tool.annotations }),
  };
}

/**
 * SHA-256 of the definitions in a canonical form (tools by name, object keys sorted): the
 * same tools in another order or with keys reordered give the same fingerprint; any change
 * to a name, description, schema or annotation gives another (OWASP MCP03, tool poisoning).
 */
export function fingerprint(definitions: ToolDefinition[]): string {
  const sorted = [...definitions].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return createHash('sha256').update(canonical(sorted), 'utf8').digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
