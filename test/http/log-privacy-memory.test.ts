import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type Reply, reply } from '../support/fake-llm-server.ts';
import { expectNoSecrets } from '../support/log-secrets.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

const USER = 'private-user';

/**
 * Memories and the knowledge graph, which the model writes: a memory decision the model
 * answers with text that is no decision (quoting the exchange), or with an error echoing it;
 * facts past the graph's limit. Their own Parley: both are off by default.
 */
describe.each(ENGINES)(
  'the log on the %s engine, at level trace, for memories and the graph',
  (engine) => {
    let setup: EngineSetup;
    let parley: RunningParley;
    /** How the model answers each memory decision, in turn (then: nothing to remember). */
    const decisions: Reply[] = [];

    beforeAll(async () => {
      setup = await engineSetup(engine);
      setup.llm.respond((body) => {
        if (body.response_format !== undefined) {
          return decisions.shift() ?? reply.text(JSON.stringify({ remember: false, memory: '' }));
        }
        // The graph's chat: one fact, a second past the limit, a look-up; one step each.
        const asked = JSON.stringify(body.messages.findLast((m) => m.role === 'user')?.content);
        if (asked.includes('secret-graph-question')) {
          const relation = (n: number) => ({
            name: 'add_relation',
            args: {
              subject: `secret-graph-s${n}`,
              relation: 'likes',
              object: `secret-graph-o${n}`,
            },
          });
          const steps = [
            relation(1),
            relation(2),
            { name: 'query_entity', args: { name: 'secret-graph-s1' } },
          ];
          const at = body.messages.findLastIndex((m) => m.role === 'user');
          const step = steps[body.messages.slice(at).filter((m) => m.role === 'tool').length];
          return step ? reply.toolCalls([step]) : reply.text('secret-graph-answer');
        }
        return reply.text('secret-memory-answer');
      });
      parley = await startParley({
        dataDir: setup.dataDir,
        env: {
          ...setup.env,
          LOG_LEVEL: 'trace',
          EMBEDDINGS_PROVIDER: 'none',
          CONV_RAG_ENABLED: 'true',
          GRAPH_ENABLED: 'true',
          GRAPH_MAX_TRIPLES: '1',
          MEMORY_RETRY_MS: '1000',
        },
      });
    });
    afterAll(async () => {
      await parley?.stop();
      await setup?.cleanup();
    });

    const ask = async (message: string) =>
      readChat(
        await parley.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message, user_id: USER }),
        }),
      );

    it('holds no exchange, memory or fact after failed memory decisions and a full graph', async () => {
      decisions.push(
        reply.text('I would remember secret-memory-garbage, not as JSON'),
        reply.error(500, { message: 'echo: secret-memory-upstream' }),
        reply.text(JSON.stringify({ remember: true, memory: 'secret-memory-kept' })),
      );
      expect((await ask('secret-memory-question')).error).toBeUndefined();
      // Tried again after each failure, until the third answer is remembered.
      await waitFor(async () => {
        const { memories } = (await (await parley.fetch(`/users/${USER}/memories`)).json()) as {
          memories: { text: string }[];
        };
        return memories.some((m) => m.text === 'secret-memory-kept');
      }, 30_000);
      await parley.waitForLog((line) => line.msg === 'background job failed; will retry');

      const graph = await ask('secret-graph-question');
      expect(graph.error).toBeUndefined();
      expect(graph.text).toBe('secret-graph-answer');
      const results = setup.llm.chats
        .at(-1)
        ?.body.messages.filter((m) => m.role === 'tool')
        .map((m) => JSON.stringify(m.content));
      expect(results?.join()).toContain('its limit'); // the second fact was refused
      await parley.settled();
      expectNoSecrets(parley.output());
    });
  },
);
