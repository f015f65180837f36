/**
 * PostgreSQL cannot store U+0000 in text or JSON (22P05), nor half of a surrogate pair in JSON
 * (22P02, from a client that cut text by UTF-16 length): the write fails, and with it the whole
 * turn or listing. Text Parley did not write itself (a question, a model's answer, an MCP
 * server's listing or stderr) has each such character replaced by U+FFFD, the replacement
 * character, as the text columns' driver stores such halves.
 */
export const storableText = (text: string): string =>
  text.replaceAll('\u0000', '\ufffd').toWellFormed();

/** `storableText` applied to every string of a value, keys included. */
export function storableValue<T>(value: T): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (Array.isArray(value)) return value.map(storableValue) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [storableText(k), storableValue(v)]),
    ) as T;
  }
  return value;
}
