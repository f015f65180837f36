import type { RunningParley } from './start-parley.ts';

/** A JSON body as the tests read it: shapes are asserted, not typed. */
// biome-ignore lint/suspicious/noExplicitAny: a test reads whatever the server answered
export type Json = any;

export interface JsonAnswer {
  status: number;
  /** The body as sent, for checks on the raw text (no secret in it, say). */
  text: string;
  body: Json;
}

/**
 * `call(token, method, path, body?)` against the Parley `parley()` returns (a getter, since a
 * suite starts it in beforeAll): a JSON body when one is given, the answer read as JSON.
 */
export function jsonCaller(parley: () => RunningParley) {
  return async (token: string, method: string, path: string, body?: unknown) => {
    const response = await parley().fetch(path, {
      method,
      token,
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, text, body: JSON.parse(text) as Json } as JsonAnswer;
  };
}
