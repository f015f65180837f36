import { z } from 'zod';
import { visibleText } from '../visible-text.ts';

export const NAME_MAX_CHARS = 100;

/**
 * An automation's name, by one rule for the API and the assistant's tool: one line (it heads
 * each result and titles the conversation), visible, at most 100 characters. A name the tool
 * kept with a line break would be refused when the web client sent it back.
 */
export const automationName = visibleText(
  z
    .string()
    .trim()
    .min(1)
    .max(NAME_MAX_CHARS)
    .regex(/^[^\p{Cc}]*$/u, {
      message: 'must not contain control characters (a name is one line)',
    }),
);
