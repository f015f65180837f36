import { describe, expect, it } from 'vitest';
import { buildSystemPrompt } from '../../src/assistant/system-prompt.ts';

const NOW = new Date('2026-11-22T15:30:00Z');

describe('the system prompt', () => {
  it("states the date and time in the user's timezone", () => {
    const prompt = buildSystemPrompt({
      now: NOW,
      profile: { timezone: 'Asia/Seoul' },
      toolNames: [],
    });
    expect(prompt).toContain('Monday, 2026-11-23, 00:30 (Asia/Seoul)');
  });

  it('falls back to UTC for a missing or unknown timezone', () => {
    for (const timezone of [null, 'Mars/Olympus']) {
      const prompt = buildSystemPrompt({ now: NOW, profile: { timezone }, toolNames: [] });
      expect(prompt).toContain('Sunday, 2026-11-22, 15:30 (UTC)');
    }
  });

  it('carries the profile and names the tools', () => {
    const prompt = buildSystemPrompt({
      now: NOW,
      profile: { displayName: '지민', facts: { likes: 'hiking' } },
      toolNames: ['set_reminder'],
    });
    expect(prompt).toContain('- Name: 지민');
    expect(prompt).toContain('- likes: hiking');
    expect(prompt).toContain('set_reminder');
  });
});
