import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { generateId } from '@ai-sdk/provider-utils';

// Turns node-llama-cpp's flat chunk callbacks into AI SDK stream parts, which
// come in blocks: text-start, text-delta..., text-end (same for reasoning).
// One block is open at a time; switching kind closes the open one.

type Kind = 'text' | 'reasoning';

export type StreamPartWriter = {
  text(delta: string): void;
  reasoning(delta: string): void;
  /** Ends the open reasoning block (the model closed its thought). */
  endReasoning(): void;
  toolCall(toolName: string, input: string): void;
  /** Ends any open block; call before `finish`. */
  close(): void;
};

export function createStreamPartWriter(
  emit: (part: LanguageModelV4StreamPart) => void,
): StreamPartWriter {
  let open: { kind: Kind; id: string } | undefined;
  let blocks = 0;
  let textStarted = false;

  const end = () => {
    if (open) emit({ type: open.kind === 'text' ? 'text-end' : 'reasoning-end', id: open.id });
    open = undefined;
  };
  const write = (kind: Kind, delta: string) => {
    if (delta === '') return;
    if (open?.kind !== kind) {
      end();
      open = { kind, id: `${kind}-${blocks++}` };
      emit({ type: kind === 'text' ? 'text-start' : 'reasoning-start', id: open.id });
    }
    emit({ type: kind === 'text' ? 'text-delta' : 'reasoning-delta', id: open.id, delta });
  };

  return {
    text(delta) {
      // Templates leave blank lines after a thought; an answer never starts with them.
      const kept = textStarted ? delta : delta.trimStart();
      if (kept !== '') textStarted = true;
      write('text', kept);
    },
    reasoning(delta) {
      write('reasoning', delta);
    },
    endReasoning() {
      if (open?.kind === 'reasoning') end();
    },
    toolCall(toolName, input) {
      end();
      const toolCallId = generateId();
      emit({ type: 'tool-input-start', id: toolCallId, toolName });
      emit({ type: 'tool-input-delta', id: toolCallId, delta: input });
      emit({ type: 'tool-input-end', id: toolCallId });
      emit({ type: 'tool-call', toolCallId, toolName, input });
    },
    close: end,
  };
}
