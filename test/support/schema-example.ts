/**
 * A JSON Schema as /openapi.json carries one (zod's output): only the keywords the walks read.
 */
export interface JsonSchema {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  minItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
}

/** Follows a `$ref` within the document (`#/components/…`) or the schema's own `$defs`. */
export function resolveRef(schema: JsonSchema, roots: unknown[]): JsonSchema {
  let current = schema;
  for (let hops = 0; current.$ref && hops < 10; hops++) {
    const pointer = current.$ref.replace(/^#\//, '').split('/');
    const found = roots
      .map((root) => pointer.reduce<unknown>((node, key) => (node as never)?.[key], root))
      .find((node) => node !== undefined);
    if (!found) return {};
    current = found as JsonSchema;
  }
  return current;
}

/** The first alternative of a union, the schema itself otherwise. */
export function firstBranch(schema: JsonSchema, roots: unknown[]): JsonSchema {
  const resolved = resolveRef(schema, roots);
  const branches = resolved.anyOf ?? resolved.oneOf;
  const usable = branches?.find((branch) => resolveRef(branch, roots).type !== 'null');
  if (usable) return firstBranch(usable, roots);
  if (resolved.allOf?.[0]) return firstBranch(resolved.allOf[0], roots);
  return resolved;
}

/** The JSON type(s) a schema takes, after `$ref` and unions (empty: any). */
export function typesOf(schema: JsonSchema, roots: unknown[]): string[] {
  const resolved = resolveRef(schema, roots);
  const branches = resolved.anyOf ?? resolved.oneOf ?? resolved.allOf;
  if (branches) return [...new Set(branches.flatMap((branch) => typesOf(branch, roots)))];
  if (resolved.const !== undefined) return [jsonType(resolved.const)];
  if (resolved.enum) return [...new Set(resolved.enum.map(jsonType))];
  if (resolved.type === undefined) return [];
  return Array.isArray(resolved.type) ? resolved.type : [resolved.type];
}

const jsonType = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;

/**
 * A plausible valid value for a schema: required properties only, the first alternative of a
 * union. Good enough for most bodies; the walk overrides the ones a pattern constrains.
 */
export function exampleOf(schema: JsonSchema, roots: unknown[], depth = 0): unknown {
  const resolved = firstBranch(schema, roots);
  if (depth > 8) return undefined;
  if (resolved.const !== undefined) return resolved.const;
  if (resolved.enum?.length) return resolved.enum[0];
  if (resolved.default !== undefined) return resolved.default;
  const type = Array.isArray(resolved.type) ? resolved.type[0] : resolved.type;
  switch (type) {
    case 'string':
      if (resolved.format === 'uuid') return crypto.randomUUID();
      if (resolved.format === 'date-time') return new Date().toISOString();
      if (resolved.format === 'uri') return 'http://127.0.0.1:9/';
      return 'x'.repeat(Math.max(1, resolved.minLength ?? 1));
    case 'integer':
    case 'number':
      return Math.max(1, resolved.minimum ?? 1, (resolved.exclusiveMinimum ?? 0) + 1);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array':
      return Array.from({ length: resolved.minItems ?? 0 }, () =>
        exampleOf(resolved.items ?? {}, roots, depth + 1),
      );
    case 'object': {
      const value: Record<string, unknown> = {};
      for (const name of resolved.required ?? []) {
        value[name] = exampleOf(resolved.properties?.[name] ?? {}, roots, depth + 1);
      }
      return value;
    }
    default:
      return {};
  }
}
