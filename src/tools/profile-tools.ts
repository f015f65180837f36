import { tool, zodSchema } from 'ai';
import { z } from 'zod';
import { ToolRefusal } from '../assistant/tool-refusal.ts';
import { localeTag, timezoneName } from '../place-and-language.ts';
import type { UserRepository } from '../storage/user-repository.ts';
import { visibleText } from '../visible-text.ts';

export interface ProfileToolContext {
  userId: string;
  users: UserRepository;
}

/** Facts kept per user: they go into every prompt, so they are few and short. */
export const MAX_FACTS = 50;

const timezone = timezoneName('Asia/Seoul, Europe/Paris, UTC');
const locale = localeTag;

// Built once: the AI SDK caches a schema's JSON Schema on the object (see reminder-tools.ts).
const updateProfileInput = zodSchema(
  z.object({
    display_name: visibleText(z.string().trim().min(1).max(100))
      .optional()
      .describe('How to address the user'),
    timezone: timezone.optional().describe('Where the user lives, as an IANA timezone name'),
    locale: locale.optional().describe('The user’s language and region, e.g. ko-KR'),
    facts: z
      .record(
        visibleText(z.string().trim().min(1).max(64)),
        visibleText(z.string().trim().min(1).max(500)).nullable(),
      )
      .refine((facts) => Object.keys(facts).length <= 20, {
        message: 'change at most 20 facts at a time',
      })
      .optional()
      .describe(
        'Short facts worth remembering, by name (e.g. {"allergy": "peanuts"}); null forgets one',
      ),
  }),
);

/** `update_profile`, bound to one user: what the assistant remembers about them. */
export function profileTools(context: ProfileToolContext) {
  return {
    update_profile: tool({
      description:
        'Remember something lasting about the user: their name, where they live (timezone), ' +
        'their language, or a short fact they want kept. Only what the user said about themselves.',
      inputSchema: updateProfileInput,
      execute: async (input) => {
        const profile = await context.users.update(
          context.userId,
          {
            displayName: input.display_name,
            timezone: input.timezone,
            locale: input.locale,
            facts: input.facts,
          },
          (merged) => {
            const count = Object.keys(merged.facts ?? {}).length;
            if (count > MAX_FACTS) {
              throw new ToolRefusal(
                'too_many_facts',
                `That would keep ${count} facts; at most ${MAX_FACTS} are kept. Forget some first.`,
              );
            }
          },
        );
        return {
          display_name: profile.displayName,
          timezone: profile.timezone,
          locale: profile.locale,
          facts: profile.facts,
        };
      },
    }),
  };
}
