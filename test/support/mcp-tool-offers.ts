import { expect } from 'vitest';
import { parseChatStream } from './chat-stream.ts';
import { type FakeLlmServer, reply } from './fake-llm-server.ts';
import { type Json, jsonCaller } from './json-call.ts';
import type { RunningParley } from './start-parley.ts';

/**
 * What a user sees of their MCP servers' tools, read the two ways a user can: the tools the
 * model was sent in a chat (the fake model's recorded request) and the `tools` of each server
 * in `GET /users/{user_id}/mcp-servers`. `admin` is the administrator's token.
 */
export function mcpToolOffers(
  parley: () => RunningParley,
  llm: () => FakeLlmServer,
  admin: string,
) {
  const call = jsonCaller(parley);
  return {
    call,
    /** Adds a trusted HTTP server, enabled for everyone. */
    async addServer(name: string, url: string) {
      const created = await call(admin, 'POST', '/admin/mcp-servers', {
        transport: 'http',
        name,
        url,
        trusted: true,
      });
      expect(created.status, created.text).toBe(201);
      await call(admin, 'PATCH', `/admin/mcp-servers/${created.body.id}`, { enabled: true });
    },
    /** A new user with only these servers switched on; their key. */
    async userWith(user: string, ...serverNames: string[]) {
      const key = (await call(admin, 'POST', '/admin/users', { user_id: user })).body.key as string;
      for (const server of (await call(key, 'GET', `/users/${user}/mcp-servers`)).body.servers) {
        await call(key, 'PUT', `/users/${user}/mcp-servers/${server.id}`, {
          enabled: serverNames.includes(server.name),
        });
      }
      return key;
    },
    /** One chat; the tools of these servers the model was sent, as `<server>__<tool>`. */
    async chatOffers(user: string, key: string, ...serverNames: string[]) {
      llm().enqueue(reply.text('Done.'));
      const before = llm().chats.length;
      const response = await parley().fetch('/chat', {
        method: 'POST',
        token: key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: user, message: 'hello' }),
      });
      expect(response.status).toBe(200);
      expect(parseChatStream(await response.text()).text).toBe('Done.');
      const tools = (llm().chats[before]?.body.tools ?? []).map((t) => t.function.name);
      return tools.filter((name) => serverNames.some((server) => name.startsWith(`${server}__`)));
    },
    /** The `tools` the user's status gives for one server. */
    async toolStatus(user: string, key: string, serverName: string): Promise<Json> {
      const { servers } = (await call(key, 'GET', `/users/${user}/mcp-servers`)).body;
      return servers.find((s: Json) => s.name === serverName).tools;
    },
  };
}
