import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationRepository } from '../../src/storage/conversation-repository.ts';
import { RunRepository } from '../../src/storage/run-repository.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

/**
 * A stored turn's search terms are written by the INSERT that stores it (since migration 0016;
 * before, the database generated them with `parley_search_vector(role, content)`). Whatever
 * the text, they must be exactly what that function gives, or searches would find other
 * turns than they did.
 */
const LONG = `${'a'.repeat(99_990)}😀계약서를 확인 ${'나'.repeat(20)}`;
/** Cut after 100,000 code points, "계약" is in (a bigram); after 100,000 UTF-16 units, "계" alone. */
const CUT_IN_A_RUN = `${'a'.repeat(99_997)}😀계약서`;
const TURNS: ModelMessage[][] = [
  [
    { role: 'user', content: 'What did the lease say about the deposit?' },
    { role: 'assistant', content: 'The LEASE says: returned within 30 days (Clause 4.2).' },
  ],
  [
    { role: 'user', content: '계약서를 확인했나요? 보증금은 언제 돌려받나요?' },
    { role: 'assistant', content: '계약서에 따르면 보증금은 삼십 일 안에 반환됩니다. 네' },
  ],
  [
    { role: 'user', content: '東京の天気は？ カタカナ ひらがな 漢 字 GPT로 ㄱㄴ ᄀᄂ' },
    { role: 'assistant', content: 'Émile a dit «très bien» — İstanbul ΣΊΣΥΦΟΣ straße' },
  ],
  [
    { role: 'user', content: LONG },
    { role: 'assistant', content: '' },
  ],
  [
    { role: 'user', content: CUT_IN_A_RUN },
    { role: 'assistant', content: CUT_IN_A_RUN },
  ],
  [
    { role: 'user', content: [{ type: 'text', text: '사진 속 계약서' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking it up' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'search', input: { q: '계약' } },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'search',
          output: { type: 'text', value: '보증금' },
        },
      ],
    },
    { role: 'assistant', content: 'The deposit (보증금) comes back.' },
  ],
  // Answers in parts (as the tool loop stores them): only text parts count, joined by a space;
  // a text part without its text is skipped (as string_agg skips a null).
  [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'First part' },
        { type: 'image', image: 'aGVsbG8=', mediaType: 'image/png' },
        { type: 'text', text: '둘째 계약서' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'thinking 생각' },
        { type: 'text', text: 'Answer in 부분' },
        { type: 'text', text: '' },
        { type: 'text', text: null } as unknown as { type: 'text'; text: string },
        { type: 'text' } as unknown as { type: 'text'; text: string },
        { type: 'text', text: 'PARTS 끝' },
      ],
    },
  ],
  // A text part whose text is not a string: the database reads it as the function does.
  [
    { role: 'user', content: 'numbers?' },
    { role: 'assistant', content: [{ type: 'text', text: 42 }] } as unknown as ModelMessage,
  ],
];

describe.each(ENGINES)('search terms of stored turns on the %s engine', (engine) => {
  let open: OpenTestDatabase;

  beforeAll(async () => {
    open = await openTestDatabase(engine);
    const { db } = open.database;
    const conversationId = await new ConversationRepository(db).current('searcher');
    const runs = new RunRepository(db);
    for (const turn of TURNS) {
      await runs.record(
        {
          id: randomUUID(),
          userId: 'searcher',
          model: 'test',
          startedAt: new Date(),
          turn: { conversationId, parentRunId: undefined, title: 'terms' },
        },
        { status: 'completed', toolsUsed: [] },
        turn,
      );
    }
  }, 120_000);
  afterAll(async () => {
    await open?.close();
  });

  it('are what parley_search_vector(role, content) gives, for every message', async () => {
    const { rows } = await open.database.db.$client.query<{
      role: string;
      same: boolean;
      search: string | null;
    }>(
      `SELECT role, search IS NOT DISTINCT FROM parley_search_vector(role, content) AS same,
              search::text AS search
         FROM messages ORDER BY id`,
    );
    expect(rows).toHaveLength(TURNS.flat().length);
    expect(rows.filter((row) => !row.same)).toEqual([]);
    // Questions and answers have terms (an empty answer an empty set); tool results none.
    expect(rows.map((row) => row.search === null)).toEqual(
      TURNS.flat().map((message) => message.role === 'tool'),
    );
    expect(rows[2]?.search).toContain("'계약'");
    expect(rows[2]?.search).toContain("'약서'");
  });
});
