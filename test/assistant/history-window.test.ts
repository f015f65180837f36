import type { ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { estimateTokens, fitHistory } from '../../src/assistant/history-window.ts';

const user = (content: string): ModelMessage => ({ role: 'user', content });
const assistant = (content: string): ModelMessage => ({ role: 'assistant', content });

describe('the history window', () => {
  it('keeps everything that fits', () => {
    const history = [user('hi'), assistant('hello')];
    expect(fitHistory(history, 1_000)).toEqual(history);
  });

  it('drops the oldest whole turns first, never starting mid-turn', () => {
    const history = [
      user('a'.repeat(400)),
      assistant('b'.repeat(400)),
      user('second'),
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: '1', toolName: 'list_reminders', input: {} }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: '1',
            toolName: 'list_reminders',
            output: { type: 'json', value: [] },
          },
        ],
      },
      assistant('none'),
    ] as ModelMessage[];
    const kept = fitHistory(history, 150);
    expect(kept[0]).toEqual(user('second'));
    expect(kept).toHaveLength(4);
  });

  it('counts Hangul as one token a character, Latin as one per four', () => {
    expect(estimateTokens(user('가'.repeat(100)))).toBe(104);
    expect(estimateTokens(user('a'.repeat(100)))).toBe(29);
  });
});
