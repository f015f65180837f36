import type { GbnfJsonSchema } from 'node-llama-cpp';

// node-llama-cpp constrains function arguments with a grammar built from a
// JSON-schema subset (GbnfJsonSchema). The AI SDK hands us full JSON Schema 7
// (zod's output: `anyOf`, `$schema`, `pattern`, `format: "email"`, ...).
// Keep what the subset can express and widen the rest: the grammar only has to
// admit valid arguments, the AI SDK validates them against the real schema.
// One gap needs a round trip: the subset makes every property required, so an
// optional property may be generated as null, and that null is dropped again
// (removeOmittedOptionals) before the AI SDK sees the arguments.

type Schema = Record<string, unknown>;

const ANY_JSON: GbnfJsonSchema = {
  oneOf: [
    { type: ['string', 'number', 'boolean', 'null'] },
    { type: 'array' },
    { type: 'object', additionalProperties: true },
  ],
};

const BASIC_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);
const DATE_FORMATS = new Set(['date-time', 'time', 'date']);

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const numberKey = (schema: Schema, key: string): Record<string, number> =>
  typeof schema[key] === 'number' ? { [key]: schema[key] } : {};

function convertRef(ref: string): string {
  // zod and others emit `#/definitions/X`; the subset only knows `#/$defs/X`.
  return ref.replace(/^#\/definitions\//, '#/$defs/');
}

function convertDefs(schema: Schema): Record<string, unknown> {
  const defs = isSchema(schema.$defs)
    ? schema.$defs
    : isSchema(schema.definitions)
      ? schema.definitions
      : undefined;
  if (!defs) return {};
  return {
    $defs: Object.fromEntries(Object.entries(defs).map(([k, v]) => [k, toGbnfJsonSchema(v)])),
  };
}

function convertTyped(schema: Schema, type: string): Record<string, unknown> {
  switch (type) {
    case 'object': {
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      const properties = isSchema(schema.properties)
        ? Object.fromEntries(
            Object.entries(schema.properties).map(([k, v]) => {
              const converted = toGbnfJsonSchema(v);
              return [k, required.has(k) ? converted : { oneOf: [converted, { type: 'null' }] }];
            }),
          )
        : undefined;
      const extra = schema.additionalProperties;
      return {
        type: 'object',
        ...(properties ? { properties } : {}),
        // Undeclared keys only when the schema declares none or asks for them.
        additionalProperties:
          extra === false ? false : isSchema(extra) ? toGbnfJsonSchema(extra) : !properties,
        ...numberKey(schema, 'minProperties'),
        ...numberKey(schema, 'maxProperties'),
      };
    }
    case 'array':
      return {
        type: 'array',
        ...(isSchema(schema.items) ? { items: toGbnfJsonSchema(schema.items) } : {}),
        ...(Array.isArray(schema.prefixItems)
          ? { prefixItems: schema.prefixItems.map(toGbnfJsonSchema) }
          : {}),
        ...numberKey(schema, 'minItems'),
        ...numberKey(schema, 'maxItems'),
      };
    case 'string':
      if (typeof schema.format === 'string' && DATE_FORMATS.has(schema.format)) {
        return { type: 'string', format: schema.format };
      }
      return {
        type: 'string',
        ...numberKey(schema, 'minLength'),
        ...numberKey(schema, 'maxLength'),
      };
    default:
      return { type: BASIC_TYPES.has(type) ? type : 'string' };
  }
}

/** Converts a JSON Schema 7 document to node-llama-cpp's grammar schema subset. */
export function toGbnfJsonSchema(input: unknown): GbnfJsonSchema {
  if (!isSchema(input)) return ANY_JSON; // `true` / missing schema: any JSON value
  const common = {
    ...(typeof input.description === 'string' ? { description: input.description } : {}),
    ...convertDefs(input),
  };
  let result: Record<string, unknown>;
  if (typeof input.$ref === 'string') result = { $ref: convertRef(input.$ref) };
  else if ('const' in input) result = { const: input.const };
  else if (Array.isArray(input.enum)) result = { enum: input.enum };
  else if (Array.isArray(input.anyOf ?? input.oneOf)) {
    result = { oneOf: ((input.anyOf ?? input.oneOf) as unknown[]).map(toGbnfJsonSchema) };
  } else if (Array.isArray(input.allOf) && input.allOf.length === 1) {
    return toGbnfJsonSchema({ ...input.allOf[0], ...common });
  } else if (Array.isArray(input.type)) {
    const types = input.type.filter((t): t is string => typeof t === 'string');
    result = types.every((t) => BASIC_TYPES.has(t))
      ? { type: types }
      : { oneOf: types.map((t) => convertTyped(input, t)) };
  } else if (typeof input.type === 'string') result = convertTyped(input, input.type);
  else if (isSchema(input.properties)) result = convertTyped(input, 'object');
  else return ANY_JSON;
  // The subset's types are stricter than what we build dynamically.
  return { ...result, ...common } as GbnfJsonSchema;
}

/** Deletes the nulls that stand for optional properties the model left out. */
export function removeOmittedOptionals(value: unknown, schema: unknown): unknown {
  if (!isSchema(schema)) return value;
  if (Array.isArray(value)) {
    return isSchema(schema.items)
      ? value.map((v) => removeOmittedOptionals(v, schema.items))
      : value;
  }
  if (!isSchema(value) || !isSchema(schema.properties)) return value;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === null && !required.has(key)) continue;
    out[key] = removeOmittedOptionals(v, schema.properties[key]);
  }
  return out;
}
