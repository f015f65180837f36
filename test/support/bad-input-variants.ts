import { badUploadVariants } from './bad-upload-variants.ts';
import { exampleOf, type JsonSchema, resolveRef, typesOf } from './schema-example.ts';

/** One operation of /openapi.json, as the walk reads it. */
export interface Operation {
  method: string;
  /** The spec's path template: `/users/{user_id}/runs/{run_id}/events`. */
  template: string;
  parameters: {
    name: string;
    in: 'path' | 'query' | 'header';
    schema: JsonSchema;
    required?: boolean;
  }[];
  /** The request body's media types and its JSON schema, when the spec names one. */
  body?: { mediaTypes: string[]; schema?: JsonSchema };
  /** The statuses its responses document ("200", "404", …). */
  responses: string[];
}

/** What a valid call of the operation looks like: the variants change one part of it. */
export interface BaseCall {
  /** Path parameters, not yet encoded. */
  params: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** A JSON body, when the operation takes one. */
  json?: unknown;
  /** Any other valid body (an upload's form), sent as it is. */
  raw?: { contentType: string; body: Uint8Array };
}

export interface Variant {
  what: string;
  /** Another method than the operation's: one its path does not take. */
  method?: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** An upper-case UUID of nothing: the resource is not found, whatever the case. */
  expectNotFound?: true;
}

/** Nesting deeper than any parser or database should have to follow. */
const DEEP = 10_000;
const deepArray = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
/** Past every route's body limit in the walk's settings (1 MiB, the largest). */
const OVER_LIMIT_BYTES = 1024 * 1024 + 200 * 1024;

/** Path parameters a careless or hostile client sends, percent-encoded as they go on the wire. */
const BAD_PATH_VALUES: [string, string][] = [
  ['not-a-uuid', 'not-a-uuid'],
  ['5,000 characters', 'a'.repeat(5000)],
  ['percent-encoded NUL', '%00'],
  ['NUL inside', 'x%00y'],
  ['lone surrogate', '%ED%A0%80'],
  ['broken UTF-8', '%C3%28'],
  ['bad percent-encoding', '%zz'],
  ['truncated percent-encoding', 'a%E0%A4%A'],
  ['encoded traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['control character', '%07'],
];

const BAD_QUERY_VALUES: [string, string][] = [
  ['not a number', 'abc'],
  ['negative', '-1'],
  ['1e309', '1e309'],
  ['huge integer', '99999999999999999999999'],
  ['past a 32-bit integer', '2147483648'],
  ['fraction', '1.5'],
  ['empty', ''],
  ['5,000 characters', 'a'.repeat(5000)],
  ['percent-encoded NUL', '%00'],
  ['lone surrogate', '%ED%A0%80'],
  ['bad percent-encoding', '%zz'],
  ['JSON-looking', '%7B%22a%22%3A1%7D'],
];

const BAD_HEADER_VALUES: [string, string][] = [
  ['not a number', 'abc'],
  ['negative', '-1'],
  ['huge integer', '99999999999999999999'],
  ['far past any event', '999999999'],
  ['empty', ''],
  ['5,000 characters', 'a'.repeat(5000)],
  ['Latin-1 bytes', 'ÿþý'],
];

/** A value of another JSON type than every type the schema takes. */
function wrongTypeValue(schema: JsonSchema, roots: unknown[]): unknown {
  const types = typesOf(schema, roots);
  const candidates: [string, unknown][] = [
    ['object', { wrong: true }],
    ['string', 'wrong'],
    ['number', 12345],
    ['boolean', true],
    ['array', ['wrong']],
    ['null', null],
  ];
  const wrong = candidates.find(
    ([type]) =>
      !types.includes(type) &&
      !(type === 'number' && types.includes('integer')) &&
      !(types.length === 0 && type !== 'object'),
  );
  return wrong?.[1] ?? { wrong: true };
}

type At = (string | number)[];

/**
 * Every property path in a body schema (`["schedule", "time"]`, `["messages", 0, "role"]`),
 * nested objects and the first item of arrays of objects included.
 */
function propertyPaths(
  schema: JsonSchema,
  roots: unknown[],
  prefix: At = [],
): { at: At; schema: JsonSchema }[] {
  if (prefix.length > 4) return [];
  const resolved = resolveRef(schema, roots);
  const branches = resolved.anyOf ?? resolved.oneOf ?? resolved.allOf ?? [resolved];
  const seen = new Map<string, { at: At; schema: JsonSchema }>();
  const add = (found: { at: At; schema: JsonSchema }) => {
    if (!seen.has(found.at.join('.'))) seen.set(found.at.join('.'), found);
  };
  for (const branch of branches) {
    const node = resolveRef(branch, roots);
    if (node.items && prefix.length > 0) {
      for (const nested of propertyPaths(node.items, roots, [...prefix, 0])) add(nested);
    }
    for (const [name, property] of Object.entries(node.properties ?? {})) {
      const at = [...prefix, name];
      add({ at, schema: property });
      for (const nested of propertyPaths(property, roots, at)) add(nested);
    }
  }
  return [...seen.values()];
}

/** The base body with the value at `at` replaced (parents made where the base has none). */
function withValue(base: unknown, at: At, value: unknown): unknown {
  const isContainer = (node: unknown) => node !== null && typeof node === 'object';
  const root: unknown = isContainer(base) && !Array.isArray(base) ? structuredClone(base) : {};
  let node = root as Record<string | number, unknown>;
  at.forEach((key, i) => {
    if (i === at.length - 1) {
      node[key] = value;
      return;
    }
    const wantArray = typeof at[i + 1] === 'number';
    const next = node[key];
    if (!isContainer(next) || Array.isArray(next) !== wantArray) node[key] = wantArray ? [] : {};
    node = node[key] as Record<string | number, unknown>;
  });
  return root;
}

/** The path of a call, from the template and (already encoded) parameter values. */
export function pathOf(template: string, encoded: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => encoded[name] ?? `{${name}}`);
}

const encodeParam = (name: string, value: string) =>
  name === '*' ? value.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(value);

/** The path (and required query) of the valid call. */
export function basePathOf(op: Operation, base: BaseCall): string {
  const encoded = Object.entries(base.params).map(([name, value]) => [
    name,
    encodeParam(name, value),
  ]);
  const query = Object.entries(base.query).map(
    ([name, value]) => [name, encodeURIComponent(value)] as [string, string],
  );
  return pathOf(op.template, Object.fromEntries(encoded)) + queryString(query);
}

const queryString = (query: [string, string][]) =>
  query.length ? `?${query.map(([name, value]) => `${name}=${value}`).join('&')}` : '';

/**
 * The bad inputs of one operation: its path parameters, query parameters, headers and body,
 * each made wrong on its own while the rest of the call stays valid.
 */
export function badInputVariants(op: Operation, base: BaseCall, roots: unknown[]): Variant[] {
  const encodedParams = Object.fromEntries(
    Object.entries(base.params).map(([name, value]) => [name, encodeParam(name, value)]),
  );
  const baseQuery = Object.entries(base.query).map(
    ([name, value]) => [name, encodeURIComponent(value)] as [string, string],
  );
  const basePath = pathOf(op.template, encodedParams) + queryString(baseQuery);
  const takesBody = op.method !== 'GET';
  const jsonBody = !takesBody
    ? undefined
    : base.json !== undefined
      ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(base.json) }
      : base.raw && { headers: { 'content-type': base.raw.contentType }, body: base.raw.body };
  /** A variant of one part, the rest as the base call has it. */
  const variant = (what: string, change: Partial<Variant>): Variant => ({
    what,
    path: change.path ?? basePath,
    headers: {
      ...base.headers,
      ...(change.body === undefined ? jsonBody?.headers : {}),
      ...change.headers,
    },
    body: change.body ?? jsonBody?.body,
    ...(change.expectNotFound && { expectNotFound: true }),
  });
  const variants: Variant[] = [];

  for (const param of op.parameters.filter((p) => p.in === 'path')) {
    const path = (raw: string) =>
      pathOf(op.template, { ...encodedParams, [param.name]: raw }) + queryString(baseQuery);
    for (const [what, raw] of BAD_PATH_VALUES) {
      variants.push(variant(`path ${param.name}: ${what}`, { path: path(raw) }));
    }
    if (resolveRef(param.schema, roots).format === 'uuid') {
      variants.push(
        variant(`path ${param.name}: upper-case UUID of nothing`, {
          path: path(crypto.randomUUID().toUpperCase()),
          expectNotFound: true,
        }),
      );
    }
  }

  const pathOnly = pathOf(op.template, encodedParams);
  const withQuery = (query: [string, string][]) => pathOnly + queryString(query);
  for (const param of op.parameters.filter((p) => p.in === 'query')) {
    const others = baseQuery.filter(([name]) => name !== param.name);
    for (const [what, raw] of BAD_QUERY_VALUES) {
      variants.push(
        variant(`query ${param.name}: ${what}`, {
          path: withQuery([...others, [param.name, raw]]),
        }),
      );
    }
    variants.push(
      variant(`query ${param.name}: repeated`, {
        path: withQuery([...others, [param.name, '1'], [param.name, '2']]),
      }),
    );
    variants.push(
      variant(`query ${param.name}: bracketed`, {
        path: withQuery([...others, [`${param.name}[a]`, '1']]),
      }),
    );
  }
  variants.push(variant('trailing slash', { path: `${pathOnly}/${queryString(baseQuery)}` }));
  variants.push(
    variant('1,000 query parameters', {
      path: withQuery([
        ...baseQuery,
        ...Array.from({ length: 1000 }, (_, i) => [`p${i}`, '1'] as [string, string]),
      ]),
    }),
  );
  // Past Node's 16 KiB of headers: refused before any route (431).
  variants.push(
    variant('URL of 20,000 characters', {
      path: withQuery([...baseQuery, ['zz', 'a'.repeat(20_000)]]),
    }),
  );
  for (const [what, name] of [
    ['unknown query parameter', 'zz_unknown'],
    ['query __proto__', '__proto__'],
  ]) {
    variants.push(
      variant(what as string, { path: withQuery([...baseQuery, [name as string, '1']]) }),
    );
  }

  for (const param of op.parameters.filter((p) => p.in === 'header')) {
    for (const [what, value] of BAD_HEADER_VALUES) {
      variants.push(variant(`header ${param.name}: ${what}`, { headers: { [param.name]: value } }));
    }
  }
  variants.push(variant('Accept of garbage', { headers: { accept: 'garbage/;;;q=x, */' } }));
  variants.push(
    variant('X-Forwarded-For of garbage', {
      headers: { 'x-forwarded-for': 'garbage, ::zz, 999.1.1.1,, ' },
    }),
  );
  if (op.method === 'GET') {
    variants.push(
      variant('If-None-Match of garbage', { headers: { 'if-none-match': '"\\garbage' } }),
    );
    variants.push(variant('Last-Event-ID of garbage', { headers: { 'last-event-id': '-1e309' } }));
    return variants;
  }

  variants.push(...bodyVariants(op, base, roots, variant));
  return variants;
}

function bodyVariants(
  op: Operation,
  base: BaseCall,
  roots: unknown[],
  variant: (what: string, change: Partial<Variant>) => Variant,
): Variant[] {
  const json = (what: string, body: string) =>
    variant(what, { headers: { 'content-type': 'application/json' }, body });
  const typed = (what: string, contentType: string, body: string) =>
    variant(what, { headers: { 'content-type': contentType }, body });
  const variants: Variant[] = [
    { ...variant('no body', {}), headers: withoutContentType(base.headers), body: undefined },
    json('empty JSON body', ''),
    json('malformed JSON', '{"a":'),
    json('JSON null', 'null'),
    json('JSON array', '[1,2]'),
    json('JSON string', '"text"'),
    json('JSON number', '42'),
    json('JSON true', 'true'),
    json(`JSON ${DEEP} arrays deep`, deepArray(DEEP)),
    json(`JSON ${DEEP} objects deep`, deepObject(DEEP)),
    json('JSON with __proto__', '{"__proto__":{"polluted":true}}'),
    json('JSON with a NUL escape at the top', '{"\\u0000":"\\u0000"}'),
    json('body over the limit', JSON.stringify({ x: 'a'.repeat(OVER_LIMIT_BYTES) })),
    typed('text/plain body', 'text/plain', 'hello'),
    typed('form-urlencoded body', 'application/x-www-form-urlencoded', 'a=1&b=2'),
    typed('multipart without boundary', 'multipart/form-data', 'a=1'),
    typed('multipart of garbage', 'multipart/form-data; boundary=xyz', 'garbage'),
    typed('JSON in UTF-16', 'application/json; charset=utf-16', '{}'),
    typed('content-type of garbage', ';;;/', '{}'),
    json('JSON after a byte order mark', '\ufeff{}'),
    variant('gzip-encoded garbage', {
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: 'not gzip',
    }),
  ];
  const schema = op.body?.schema;
  if (schema) {
    const baseJson = base.json ?? exampleOf(schema, roots);
    const field = (what: string, at: At, value: unknown) =>
      json(`field ${at.join('.')}: ${what}`, JSON.stringify(withValue(baseJson, at, value)));
    for (const { at, schema: property } of propertyPaths(schema, roots)) {
      variants.push(field('wrong type', at, wrongTypeValue(property, roots)));
      variants.push(field('null', at, null));
      variants.push(field('empty string', at, ''));
      variants.push(field('with NUL', at, 'a\u0000b'));
      variants.push(field('lone surrogate', at, 'a\ud800'));
      variants.push(field('100,000 characters', at, 'a'.repeat(100_000)));
      variants.push(field('huge number', at, 1e308));
      variants.push(field('past a 32-bit integer', at, 2 ** 31));
      variants.push(field('largest safe integer', at, Number.MAX_SAFE_INTEGER));
      variants.push(field('negative', at, -1));
      variants.push(
        field(
          'array of 20,000 items',
          at,
          Array.from({ length: 20_000 }, () => 'x'),
        ),
      );
      variants.push(
        field(
          'object of 10,000 keys',
          at,
          Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, 'v'])),
        ),
      );
      variants.push(
        json(
          `field ${at.join('.')}: ${DEEP} arrays deep`,
          JSON.stringify(withValue(baseJson, at, '@DEEP@')).replace('"@DEEP@"', deepArray(DEEP)),
        ),
      );
    }
    variants.push(
      json('unknown field', JSON.stringify({ ...(baseJson as object), zz_unknown: 1 })),
    );
  }
  if (op.body?.mediaTypes.includes('multipart/form-data'))
    variants.push(...badUploadVariants(variant));
  return variants;
}

const withoutContentType = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'content-type'));
