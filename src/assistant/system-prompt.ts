import { localDateTime, resolveTimezone } from './local-time.ts';

export interface UserProfile {
  displayName?: string | null;
  timezone?: string | null;
  locale?: string | null;
  facts?: Record<string, string>;
}

export interface PromptContext {
  now: Date;
  profile: UserProfile | undefined;
  toolNames: string[];
  /** Sections contributed by capabilities (e.g. the knowledge graph); empty ones are left out. */
  sections?: (string | undefined)[];
}

/** The system prompt: who the assistant is, what time it is for the user, what it knows. */
export function buildSystemPrompt(context: PromptContext): string {
  const timezone = resolveTimezone(context.profile?.timezone);
  const lines = [
    'You are Parley, a helpful personal assistant. Answer in the language the user writes in.',
    `The current date and time for the user is ${localDateTime(context.now, timezone)} (${timezone}).`,
  ];
  if (context.toolNames.length > 0) {
    lines.push(
      `You can use these tools when they help: ${context.toolNames.join(', ')}. ` +
        'If a tool reports an error, tell the user plainly instead of guessing.',
    );
  }
  const profile = describeProfile(context.profile);
  if (profile) lines.push(`What you know about the user:\n${profile}`);
  for (const section of context.sections ?? []) if (section) lines.push(section);
  return lines.join('\n\n');
}

function describeProfile(profile: UserProfile | undefined): string {
  if (!profile) return '';
  const facts = [
    profile.displayName ? `- Name: ${profile.displayName}` : '',
    profile.locale ? `- Locale: ${profile.locale}` : '',
    // Sorted: the database does not keep the order facts were told in (jsonb orders keys).
    ...Object.entries(profile.facts ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, value]) => `- ${key}: ${value}`),
  ];
  return facts.filter(Boolean).join('\n');
}
