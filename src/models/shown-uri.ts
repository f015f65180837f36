/**
 * A model URI, or another server's address (LangSmith's endpoint), as Parley shows it (logs,
 * `/health`, which needs no token, chat errors, model ids): without a user, password, query
 * or fragment. A private GGUF is often fetched through a presigned URL, whose signature is in
 * its query: whoever reads it may download the file. `hf:` URIs and paths are shown as they are.
 */
export function shownUri(uri: string): string {
  if (!/^https?:\/\//i.test(uri) || !URL.canParse(uri)) return uri;
  const url = new URL(uri);
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  return url.href;
}

/** `text` (an error's message, which may quote the URI) with the URI as `shownUri` shows it. */
export function hideUriSecrets(text: string, uri: string): string {
  const shown = shownUri(uri);
  if (shown === uri) return text;
  const forms = new Set([uri, new URL(uri).href]);
  let result = text;
  for (const form of forms) result = result.split(form).join(shown);
  return result;
}
