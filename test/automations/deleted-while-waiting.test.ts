import { describe, expect, it } from 'vitest';
import { call, ownChatUnderWay } from '../support/automation-ticks.ts';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A run waits for the user's own chat to end (a user's chats run one at a time, up to a chat's
 * time limit). The user deletes the automation meanwhile, or pauses it before its scheduled
 * run was answered: its prompt is then not answered at all, so none of its tools act for an
 * automation the user has just stopped.
 */
describe.each(ENGINES)('an automation deleted while its run waits on the %s engine', (engine) => {
  const stack = useReminderStack(engine, { start: '2030-05-01T00:00:00Z' });

  const api = (method: string, path: string, body?: unknown) =>
    call(stack().parley, method, path, body);

  /** A user's daily automation, and the user's own chat under way (ownChatUnderWay). */
  async function busyWithOwnChat(userId: string, chatId: string, time: string) {
    expect((await stack().putProfile(userId, { telegram_chat_id: chatId })).status).toBe(200);
    const made = await api('POST', `/users/${userId}/automations`, {
      prompt: 'Order the groceries',
      schedule: { type: 'daily', time },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const id = made.body.id as string;
    const busy = await ownChatUnderWay(stack(), userId, reply.text('Groceries ordered.'));
    return { id, ...busy, claimed: () => busy.runClaimed(id) };
  }

  it('does not ask the model for it once the user’s chat has ended', async () => {
    const { id, chats, own, release, mark, claimed } = await busyWithOwnChat(
      'busy',
      '5701',
      '08:00',
    );
    expect((await api('POST', `/users/busy/automations/${id}/run`)).status).toBe(202);
    await claimed();
    expect((await api('DELETE', `/users/busy/automations/${id}`)).status).toBe(200);
    release();
    expect((await own).text).toBe('Here is my own answer.');
    await waitFor(() =>
      stack()
        .parley.logs.slice(mark)
        .some((l) => l.automationId === id && /^automation (run done|deleted)/.test(String(l.msg))),
    );
    // Only the user's own question reached the model; the automation's reply is still unasked.
    expect(stack().llm.chats.length).toBe(chats + 1);
    expect(stack().llm.pendingReplies).toBe(1);
    expect(stack().telegram.visibleIn('5701')).toEqual([]);
    // The unasked reply is answered to someone else, so the next scenario starts clean.
    const other = await stack().parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Anything', user_id: 'someone-else' }),
    });
    expect((await readChat(other)).text).toBe('Groceries ordered.');
  });

  it('does not answer a scheduled run paused while it waits, and records it as skipped', async () => {
    const { id, chats, own, release, claimed } = await busyWithOwnChat('halt', '5702', '09:00');
    // 09:00: the scheduled run is claimed, and waits for the user's turn.
    stack().setClock('2030-05-01T09:00:00Z');
    await claimed();
    expect((await api('POST', `/users/halt/automations/${id}/pause`)).status).toBe(200);
    release();
    expect((await own).text).toBe('Here is my own answer.');
    const runsOf = async () =>
      (await api('GET', `/users/halt/automations/${id}/runs`)).body.runs as {
        status: string;
        error: string | null;
      }[];
    await waitFor(async () => {
      const status = (await runsOf())[0]?.status;
      return status !== undefined && status !== 'running' && status !== 'queued';
    });
    expect(await runsOf()).toMatchObject([
      { status: 'skipped', error: 'paused before it was answered' },
    ]);
    expect(stack().llm.chats.length).toBe(chats + 1);
    expect(stack().llm.pendingReplies).toBe(1);
    expect(stack().telegram.visibleIn('5702')).toEqual([]);
    const listed = (await api('GET', '/users/halt/automations')).body.automations[0];
    expect(listed).toMatchObject({ status: 'paused', unread: 0 });
  });
});
