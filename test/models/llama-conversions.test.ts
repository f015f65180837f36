import type { LanguageModelV4Prompt } from '@ai-sdk/provider';
import { getLlama } from 'node-llama-cpp';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  removeOmittedOptionals,
  toGbnfJsonSchema,
} from '../../src/models/llama/json-schema-to-gbnf.ts';
import { promptToChatHistory } from '../../src/models/llama/prompt-to-chat-history.ts';
import { toolsToFunctions } from '../../src/models/llama/tools-to-functions.ts';

describe('promptToChatHistory', () => {
  it('folds tool results into the model turn that made the call, and continues that turn', () => {
    const prompt: LanguageModelV4Prompt = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: '서울 날씨?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Need the weather tool.' },
          {
            type: 'tool-call',
            toolCallId: 'c1',
            toolName: 'get_weather',
            input: { city: 'Seoul' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'get_weather',
            output: { type: 'json', value: { celsius: 21 } },
          },
        ],
      },
    ];
    const { history, warnings } = promptToChatHistory(prompt);
    expect(warnings).toEqual([]);
    expect(history).toEqual([
      { type: 'system', text: 'Be brief.' },
      { type: 'user', text: '서울 날씨?' },
      {
        type: 'model',
        response: [
          { type: 'segment', segmentType: 'thought', text: 'Need the weather tool.', ended: true },
          {
            type: 'functionCall',
            name: 'get_weather',
            params: { city: 'Seoul' },
            result: { celsius: 21 },
          },
        ],
      },
    ]);
  });

  it('ends with an empty model turn after a user turn; reads text files, warns about others', () => {
    const { history, warnings } = promptToChatHistory([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Read this' },
          {
            type: 'file',
            data: { type: 'text', text: 'notes' },
            mediaType: 'text/plain',
            filename: 'a.txt',
          },
          { type: 'file', data: { type: 'data', data: 'aGk=' }, mediaType: 'application/pdf' },
        ],
      },
    ]);
    expect(history).toEqual([
      { type: 'user', text: 'Read this\na.txt:\nnotes' },
      { type: 'model', response: [] },
    ]);
    expect(warnings).toEqual([
      { type: 'unsupported', feature: 'user file part (application/pdf)' },
    ]);
  });
});

describe('toolsToFunctions', () => {
  const weather = {
    type: 'function' as const,
    name: 'get_weather',
    description: 'Weather',
    inputSchema: z.toJSONSchema(z.object({ city: z.string() })),
  };

  it('offers no functions for toolChoice none, and only the named one for a forced tool', () => {
    const other = { ...weather, name: 'get_time' };
    expect(toolsToFunctions([weather], { type: 'none' }).functions).toBeUndefined();
    const forced = toolsToFunctions([weather, other], { type: 'tool', toolName: 'get_time' });
    expect(Object.keys(forced.functions ?? {})).toEqual(['get_time']);
    expect(forced.warnings[0]).toMatchObject({ type: 'compatibility' });
  });
});

describe('toGbnfJsonSchema', () => {
  const input = z.object({
    city: z.string().min(1).describe('City name'),
    unit: z.enum(['c', 'f']).optional(),
    note: z.string().nullable(),
    email: z.email(),
    tags: z.array(z.string()).max(3),
    when: z.iso.datetime().optional(),
  });
  const schema = z.toJSONSchema(input);

  it('keeps what the grammar subset expresses, widens the rest, and lets optionals be null', () => {
    expect(toGbnfJsonSchema(schema)).toEqual({
      type: 'object',
      properties: {
        city: { type: 'string', minLength: 1, description: 'City name' },
        unit: { oneOf: [{ enum: ['c', 'f'] }, { type: 'null' }] },
        note: { type: ['string', 'null'] },
        email: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
        when: { oneOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] },
      },
      additionalProperties: false,
    });
  });

  it('compiles into a grammar whose output, minus omitted optionals, fits the zod schema', async () => {
    const llama = await getLlama({ gpu: false, build: 'never', progressLogs: false });
    try {
      const converted = toGbnfJsonSchema(schema) as Parameters<
        typeof llama.createGrammarForJsonSchema
      >[0];
      const grammar = await llama.createGrammarForJsonSchema(converted);
      const generated = {
        city: 'Seoul',
        unit: null,
        note: null,
        email: 'a@b.co',
        tags: ['x'],
        when: null,
      };
      const parsed = grammar.parse(JSON.stringify(generated));
      const stripped = removeOmittedOptionals(parsed, schema);
      expect(input.safeParse(stripped).success).toBe(true);
      expect(stripped).toEqual({
        city: 'Seoul',
        note: null, // nullable and required: a real value, kept
        email: 'a@b.co',
        tags: ['x'],
      });
    } finally {
      await llama.dispose();
    }
  });
});
