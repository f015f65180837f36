import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';

/** The reply every chat request gets: `tokens` chunks, each after `delayMs`. */
export interface ReplyShape {
  tokens: number;
  delayMs: number;
}

export interface FakeLlm {
  /** Base URL ending in `/v1`, for LLM_BASE_URL. */
  url: string;
  pid: number;
  setReply(shape: ReplyShape): Promise<void>;
  stats(): Promise<{ served: number; unexpected: number }>;
  /** Arrival times (epoch ms, `performance.timeOrigin + performance.now()`) of the chat requests since the last call. */
  arrivals(): Promise<number[]>;
  close(): Promise<void>;
}

/** Starts the fake LLM server in a child process (see fake-llm-child.ts). */
export async function startFakeLlm(shape: ReplyShape): Promise<FakeLlm> {
  const child: ChildProcess = fork(new URL('./fake-llm-child.ts', import.meta.url), {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [ready] = (await once(child, 'message')) as [{ url: string }];
  const ask = async <T>(message: object): Promise<T> => {
    child.send(message);
    const [answer] = (await once(child, 'message')) as [T];
    return answer;
  };
  const fake: FakeLlm = {
    url: ready.url,
    pid: child.pid as number,
    setReply: async (next) => {
      await ask({ type: 'reply', shape: next });
    },
    stats: () => ask({ type: 'stats' }),
    arrivals: async () => (await ask<{ arrivals: number[] }>({ type: 'arrivals' })).arrivals,
    close: async () => {
      const exited = once(child, 'exit');
      child.disconnect();
      await exited;
    },
  };
  await fake.setReply(shape);
  return fake;
}
