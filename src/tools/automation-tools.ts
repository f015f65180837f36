import { tool, zodSchema } from 'ai';
import { z } from 'zod';
import { automationName } from '../automations/automation-fields.ts';
import type { AutomationService } from '../automations/automation-service.ts';
import { modelScheduleSchema } from '../automations/model-schedule.ts';
import { scheduleInWords } from '../automations/schedule-words.ts';
import { AppError } from '../errors.ts';
import type { AutomationRecord } from '../storage/automation-repository.ts';
import { visibleText } from '../visible-text.ts';

export interface AutomationToolContext {
  userId: string;
  automations: AutomationService;
}

// Built once: the AI SDK caches a schema's JSON Schema on the object (see reminder-tools.ts).
const createInput = zodSchema(
  z.object({
    prompt: visibleText(z.string().trim().min(1).max(4_000)).describe(
      'What to do at each run, as the user would ask it (it is answered with tools)',
    ),
    schedule: modelScheduleSchema,
    name: automationName.optional().describe('A short name, one line'),
  }),
);
const listInput = zodSchema(z.object({}));

/**
 * `create_automation` / `list_automations`, bound to one user. Each result carries the
 * schedule in words, so the assistant repeats back what was understood.
 */
export function automationTools(context: AutomationToolContext) {
  return {
    create_automation: tool({
      description:
        'Schedule a prompt that the assistant answers on its own at set times (in the user’s ' +
        'timezone) and sends the user. Repeat the schedule back in words from `schedule_in_words`.',
      inputSchema: createInput,
      execute: async (input) => {
        try {
          return describe(await context.automations.create(context.userId, input));
        } catch (error) {
          // The service's refusal (too many, too often, in the past) in its own words.
          if (AppError.isInstance(error)) return { error: error.message };
          throw error;
        }
      },
    }),
    list_automations: tool({
      description: "List the user's automations (prompts on a schedule).",
      inputSchema: listInput,
      execute: async () => (await context.automations.list(context.userId)).map(describe),
    }),
  };
}

function describe(automation: AutomationRecord) {
  return {
    id: automation.id,
    name: automation.name,
    prompt: automation.prompt,
    schedule_in_words: scheduleInWords(automation.schedule, automation.timezone),
    status: automation.status,
    next_run_at: automation.nextRunAt?.toISOString() ?? null,
  };
}
