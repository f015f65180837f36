/**
 * A `fetch` whose error answers (status 400 and up) reach the caller without their body: the
 * status, status text and headers only, the body read no further and dropped.
 *
 * For a client library that copies an error answer's body into its error's message and
 * prints some of those messages itself (`console`), past the log and its rules: LangSmith's
 * validation errors quote the request they refuse (a trace: users' questions, answers, tool
 * inputs and outputs), and a proxy in front of it may echo anything, headers included. What
 * Parley keeps of a failure is its status (error-log-fields.ts), which this leaves whole.
 */
export function withoutErrorBodies(fetchImplementation: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await fetchImplementation(input, init);
    if (response.status < 400) return response;
    await response.body?.cancel().catch(() => undefined);
    return new Response(null, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
