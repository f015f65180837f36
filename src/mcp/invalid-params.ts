import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  isJSONRPCRequest,
  ListToolsRequestSchema,
  PingRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

/** The requests Parley's MCP server answers, with the shape the SDK parses each into. */
const REQUESTS = new Map<string, { safeParse(value: unknown): ParseResult }>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['tools/call', CallToolRequestSchema],
]);

type ParseResult =
  | { success: true }
  | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };

/**
 * Answers a request whose params do not have its method's shape with JSON-RPC's "invalid
 * params" (-32602) before the SDK sees it. The SDK parses params inside the handler and reports
 * the failure as "internal error" (-32603) with the validator's whole dump as the message
 * (typescript-sdk issue #2284), which tells a client that Parley broke rather than that its
 * call was wrong. Set after `server.connect(transport)`, which installs the handler it wraps.
 */
export function answerInvalidParams(transport: Transport): void {
  const handle = transport.onmessage;
  if (!handle) throw new Error('answerInvalidParams: connect the server first');
  transport.onmessage = (message, extra) => {
    const schema = isJSONRPCRequest(message) ? REQUESTS.get(message.method) : undefined;
    const parsed = schema?.safeParse(message);
    if (!isJSONRPCRequest(message) || !parsed || parsed.success) {
      handle(message, extra);
      return;
    }
    const issue = parsed.error.issues[0];
    const where = issue ? issue.path.map(String).join('.') : 'params';
    void transport
      .send(
        {
          jsonrpc: '2.0',
          id: message.id,
          error: {
            code: ErrorCode.InvalidParams,
            message: `Invalid params: ${where}: ${issue?.message ?? 'not the shape this method takes'}`,
          },
        },
        { relatedRequestId: message.id },
      )
      .catch(() => {}); // the client left: nothing to tell
  };
}
