import { describe, expect, it } from 'vitest';
import type { ChatEvent } from '../../src/assistant/chat-events.ts';
import { LocalFollower, type NumberedEvent, wakeAll } from '../../src/runs/local-follower.ts';

/** A run as the generating process keeps it: its events so far, its end, its waiters. */
function liveRun() {
  const run = { events: [] as ChatEvent[], ended: false, waiters: new Set<() => void>() };
  return {
    run,
    push(text: string) {
      run.events.push({ type: 'text', text });
      wakeAll(run.waiters);
    },
    end(runId: string) {
      run.events.push({ type: 'done', runId });
      run.ended = true;
      wakeAll(run.waiters);
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A listener of a run generated in this process (resumable answers, issue 32): what it reads
 * after each way its wait can end. The HTTP tests (test/runs/resume.test.ts) show the same
 * through the server; these pin the waits no client can time.
 */
describe('a listener of a run of this process', () => {
  it('reads from its position on, waits for the next event, and ends with the run', async () => {
    const live = liveRun();
    live.push('a');
    live.push('b');
    let released = 0;
    const follower = new LocalFollower(live.run, 1, new AbortController().signal, () => {
      released += 1;
    });
    const seen: NumberedEvent[] = [];
    const reading = (async () => {
      for await (const event of follower) seen.push(event);
    })();
    await settle();
    expect(seen).toEqual([{ seq: 2, event: { type: 'text', text: 'b' } }]);
    live.push('c');
    live.end('r1');
    await reading;
    expect(seen.map((e) => e.seq)).toEqual([2, 3, 4]);
    expect(seen.at(-1)?.event).toEqual({ type: 'done', runId: 'r1' });
    expect(released).toBe(1);
    expect(live.run.waiters.size).toBe(0);
  });

  it('woken with nothing new, keeps waiting and is woken again', async () => {
    const live = liveRun();
    const follower = new LocalFollower(live.run, 0, new AbortController().signal, () => {});
    const next = follower.next();
    await settle();
    wakeAll(live.run.waiters); // nothing was pushed
    await settle();
    expect(live.run.waiters.size).toBe(1);
    live.push('late');
    expect(await next).toEqual({
      done: false,
      value: { seq: 1, event: { type: 'text', text: 'late' } },
    });
  });

  it('stops at once when its client leaves, mid-wait, and is released once', async () => {
    const live = liveRun();
    live.push('a');
    const leaving = new AbortController();
    let released = 0;
    const follower = new LocalFollower(live.run, 1, leaving.signal, () => {
      released += 1;
    });
    const next = follower.next();
    leaving.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(await follower.next()).toEqual({ done: true, value: undefined });
    await follower.return();
    expect(released).toBe(1);
    expect(live.run.waiters.size).toBe(0);
  });

  it('released once when its reader stops early (the connection closed)', async () => {
    const live = liveRun();
    live.push('a');
    live.push('b');
    let released = 0;
    const follower = new LocalFollower(live.run, 0, new AbortController().signal, () => {
      released += 1;
    });
    for await (const event of follower) {
      expect(event.seq).toBe(1);
      break;
    }
    expect(released).toBe(1);
    live.push('c');
    expect(await follower.next()).toEqual({ done: true, value: undefined });
  });
});
