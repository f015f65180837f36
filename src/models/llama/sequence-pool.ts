import type { LlamaContext, LlamaContextSequence } from 'node-llama-cpp';

// A context has a fixed number of sequences (parallel conversations sharing
// one KV cache). Calls borrow one and give it back instead of disposing it:
// a returned sequence keeps its evaluated tokens, and LlamaChat only evaluates
// the part of the next prompt that differs, so the second step of a tool loop
// (same prompt plus a tool result) does not re-read the whole conversation.

export type SequencePool = {
  acquire(signal?: AbortSignal): Promise<LlamaContextSequence>;
  release(sequence: LlamaContextSequence): void;
};

export function createSequencePool(context: LlamaContext): SequencePool {
  const idle: LlamaContextSequence[] = [];
  const waiting: { resolve: (s: LlamaContextSequence) => void; reject: (e: unknown) => void }[] =
    [];

  return {
    acquire(signal) {
      signal?.throwIfAborted();
      // Most recently used first: it most likely holds this conversation.
      const reused = idle.pop();
      if (reused) return Promise.resolve(reused);
      if (context.sequencesLeft > 0) return Promise.resolve(context.getSequence());
      return new Promise((resolve, reject) => {
        const waiter = {
          resolve: (s: LlamaContextSequence) => {
            signal?.removeEventListener('abort', onAbort);
            resolve(s);
          },
          reject,
        };
        const onAbort = () => {
          waiting.splice(waiting.indexOf(waiter), 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        waiting.push(waiter);
      });
    },
    release(sequence) {
      // A disposed sequence (failed call) frees its slot for a new one.
      const usable = sequence.disposed
        ? waiting.length > 0 && context.sequencesLeft > 0
          ? context.getSequence()
          : undefined
        : sequence;
      if (!usable) return;
      const next = waiting.shift();
      if (next) next.resolve(usable);
      else idle.push(usable);
    },
  };
}
