import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
} from '@modelcontextprotocol/sdk/validation/types.js';

/**
 * The MCP client's check of tools' structured results against their `outputSchema`, which the
 * SDK compiles for every tool as soon as it lists them. A schema that does not compile (a type
 * that does not exist, a `$ref` to nothing: the server's text, untrusted) makes the SDK's own
 * validator throw, and with it the whole `tools/list`: every tool of the server would be lost
 * to one tool's mistake. Here such a schema checks nothing instead (the model reads a result's
 * text, not its shape), and `onUnusable` is told, once per schema.
 */
export class LenientOutputValidator implements jsonSchemaValidator {
  readonly #ajv = new AjvJsonSchemaValidator();
  readonly #onUnusable: (reason: string) => void;

  constructor(onUnusable: (reason: string) => void) {
    this.#onUnusable = onUnusable;
  }

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    try {
      return this.#ajv.getValidator<T>(schema);
    } catch (error) {
      this.#onUnusable(error instanceof Error ? error.name : 'error');
      return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
    }
  }
}
