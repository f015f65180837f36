import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';

interface HistoryPage {
  user_id: string;
  turns: Array<{
    run_id: string;
    created_at: string;
    question: string;
    answer: string;
    interrupted: boolean;
    status: string | null;
    feedback: { score: number; comment: string | null } | null;
  }>;
  next_before: string | null;
}

describe.each(ENGINES)('GET /users/{user_id}/history on the %s engine', (engine) => {
  let stack: EngineStack;

  beforeAll(async () => {
    stack = await startEngineStack(engine);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const history = async (user: string, query = '') => {
    const response = await stack.parley.fetch(`/users/${user}/history${query}`);
    expect(response.status).toBe(200);
    return (await response.json()) as HistoryPage;
  };

  it('pages a conversation newest first, each turn with its run_id, time and feedback', async () => {
    stack.llm.respond((body) =>
      reply.text(`answer to ${String(body.messages.findLast((m) => m.role === 'user')?.content)}`),
    );
    const runs: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const stream = await stack.chat('hilda', `question ${i}`);
      runs.push(stream.runId as string);
    }
    await stack.chat('other', 'not hilda');
    const feedback = await stack.post('/feedback', { run_id: runs[3], score: 0, comment: 'meh' });
    expect(feedback.status).toBe(200);

    const first = await history('hilda', '?limit=2');
    expect(first.turns.map((turn) => turn.question)).toEqual(['question 5', 'question 4']);
    expect(first.turns[0]).toMatchObject({
      run_id: runs[4],
      answer: 'answer to question 5',
      interrupted: false,
      status: 'completed',
      feedback: null,
    });
    expect(first.turns[1]?.feedback).toEqual({ score: 0, comment: 'meh' });
    expect(Number.isNaN(Date.parse(first.turns[0]?.created_at ?? ''))).toBe(false);
    expect(first.next_before).toMatch(/^\d+$/);

    const second = await history('hilda', `?limit=2&before=${first.next_before}`);
    expect(second.turns.map((turn) => turn.question)).toEqual(['question 3', 'question 2']);
    const last = await history('hilda', `?limit=2&before=${second.next_before}`);
    expect(last.turns.map((turn) => turn.run_id)).toEqual([runs[0]]);
    expect(last.next_before).toBeNull();

    expect((await history('nobody')).turns).toEqual([]);
    const reset = await stack.parley.fetch('/reset?user_id=hilda', { method: 'POST' });
    expect(reset.status).toBe(200);
    expect((await history('hilda')).turns).toEqual([]);
    expect((await history('other')).turns.map((turn) => turn.question)).toEqual(['not hilda']);
  });

  it('refuses a cursor or limit it did not give out', async () => {
    for (const query of ['?before=abc', '?limit=0', '?limit=101', '?before=-1']) {
      const response = await stack.parley.fetch(`/users/hilda/history${query}`);
      expect(response.status, query).toBe(422);
    }
  });

  it('is in the OpenAPI document with the per-user errors', async () => {
    const document = (await (await stack.parley.fetch('/openapi.json')).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    const operation = document.paths['/users/{user_id}/history']?.get;
    expect(Object.keys(operation?.responses ?? {}).sort()).toEqual([
      '200',
      '401',
      '403',
      '422',
      '429',
      '500',
      '503',
    ]);
  });
});
