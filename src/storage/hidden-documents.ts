/**
 * The `kind` of a document row no search, listing or export sees: a large source while it is
 * written a batch at a time (it becomes visible, under its real kind and source, in one short
 * transaction), or a replaced one whose rows are being deleted a batch at a time. Every reader
 * filters on `kind` (the listings and exports ask for 'document' or 'conversation'; the
 * searches leave this one out).
 */
export const HIDDEN = 'hidden';

/**
 * The source name of a hidden row: a control character no source may contain (upload-names.ts
 * refuses them), so it never takes the (owner, source) a real document has or will have.
 */
export const hiddenSource = (tag: string | number) => `\u0001${tag}`;
