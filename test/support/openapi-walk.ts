import type { Operation } from './bad-input-variants.ts';
import type { JsonSchema } from './schema-example.ts';

/** /openapi.json, as far as a walk of its operations reads it. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, Record<string, unknown>>>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The operations of the document, with their parameters and body as the walk reads them. */
export function operationsOf(document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([template, methods]) =>
    Object.entries(methods)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, spec]) => {
        const content = (spec.requestBody as { content?: Record<string, { schema?: JsonSchema }> })
          ?.content;
        return {
          method: method.toUpperCase(),
          template,
          parameters: ((spec.parameters ?? []) as Operation['parameters']).map((p) => ({
            name: p.name,
            in: p.in,
            schema: p.schema ?? {},
            required: p.required,
          })),
          responses: Object.keys((spec.responses ?? {}) as Record<string, unknown>),
          ...(content && {
            body: {
              mediaTypes: Object.keys(content),
              schema: content['application/json']?.schema,
            },
          }),
        } as Operation;
      }),
  );
}

/** Whether a 4xx body is the error shape of the door the path belongs to. */
export function errorShapeProblem(path: string, status: number, text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `a ${status} whose body is not JSON: ${text.slice(0, 200)}`;
  }
  const record = (body ?? {}) as Record<string, unknown>;
  if (path.startsWith('/v1/')) {
    const error = record.error as { message?: unknown } | undefined;
    return typeof error?.message === 'string'
      ? undefined
      : `a ${status} without OpenAI's {"error": {"message"}}: ${text.slice(0, 200)}`;
  }
  // The MCP door answers what its clients read: a JSON-RPC error (or the usual detail).
  if (path.startsWith('/mcp') && record.jsonrpc === '2.0' && record.error) return undefined;
  const detail = record.detail;
  const isList =
    Array.isArray(detail) &&
    detail.length > 0 &&
    detail.every(
      (item) =>
        Array.isArray((item as { loc?: unknown }).loc) &&
        typeof (item as { msg?: unknown }).msg === 'string',
    );
  return typeof detail === 'string' || isList
    ? undefined
    : `a ${status} without Parley's {"detail": …}: ${text.slice(0, 200)}`;
}
