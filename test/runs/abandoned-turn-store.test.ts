import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeAbandonedTurns } from '../../src/runs/abandoned-turns.ts';
import { ConversationRepository } from '../../src/storage/conversation-repository.ts';
import { HistoryRepository } from '../../src/storage/history-repository.ts';
import { RunRepository } from '../../src/storage/run-repository.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

/**
 * How a dead holder's run is stored (on both engines, through the real repositories): in the
 * conversation it named, or the user's current one when it named none (a Telegram chat that
 * follows the shared pointer); the thinking its listeners were shown is not kept; a run its
 * holder stored before dying, or whose conversation was deleted, is left as it is.
 */
describe.each(ENGINES)('storing an abandoned turn on the %s engine', (engine) => {
  let opened: OpenTestDatabase;
  let conversations: ConversationRepository;
  let history: HistoryRepository;
  let store: ReturnType<typeof storeAbandonedTurns>;

  beforeAll(async () => {
    opened = await openTestDatabase(engine);
    const { db } = opened.database;
    conversations = new ConversationRepository(db);
    history = new HistoryRepository(db);
    store = storeAbandonedTurns({
      runs: new RunRepository(db),
      currentConversation: (userId) => conversations.current(userId),
      model: 'test-model',
    });
  });
  afterAll(() => opened?.close());

  const turnsOf = async (conversationId: string) =>
    (await history.turns(conversationId, undefined, 20)).map((turn) => ({
      runId: turn.runId,
      question: turn.question,
      answer: turn.answer,
      interrupted: turn.interrupted,
      status: turn.status,
    }));

  it('goes to the current conversation when the run named none, without its thinking', async () => {
    const runId = randomUUID();
    await store({
      runId,
      userId: 'tg-user',
      startedAt: new Date(),
      turn: { question: 'Is the boiler serviced?' },
      text: '<think>the user asks about the boiler</think>It was serviced in',
    });
    const current = await conversations.current('tg-user');
    expect(await turnsOf(current)).toEqual([
      {
        runId,
        question: 'Is the boiler serviced?',
        answer: 'It was serviced in',
        interrupted: true,
        status: 'interrupted',
      },
    ]);
  });

  it('keeps a question whose answer had not begun, once, and leaves a stored run alone', async () => {
    const { id } = (await conversations.create('web-user', undefined, false, 1)) as { id: string };
    const runId = randomUUID();
    const abandoned = {
      runId,
      userId: 'web-user',
      startedAt: new Date(),
      turn: { question: 'Still there?', conversationId: id },
      text: '<think>unfinished thought',
    };
    await store(abandoned);
    // Its holder, only slow, stored it after the run was claimed: nothing is added or fails.
    await store({ ...abandoned, text: 'a longer answer' });
    expect(await turnsOf(id)).toEqual([
      { runId, question: 'Still there?', answer: '', interrupted: false, status: 'interrupted' },
    ]);
  });

  it('is dropped when its conversation was deleted meanwhile', async () => {
    const { id } = (await conversations.create('deleter', undefined, false, 1)) as { id: string };
    await conversations.delete('deleter', id);
    await expect(
      store({
        runId: randomUUID(),
        userId: 'deleter',
        startedAt: new Date(),
        turn: { question: 'Gone?', conversationId: id },
        text: 'yes',
      }),
    ).resolves.toBeUndefined();
  });
});
