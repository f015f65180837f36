import { z } from 'zod';
import { localeTag, timezoneName } from '../../place-and-language.ts';
import type { ProfileService, ProfileView } from '../../reminders/profile-service.ts';
import { visibleText } from '../../visible-text.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';

const profileSchema = z.object({
  user_id: z.string(),
  display_name: z.string().nullable(),
  timezone: z.string().describe('IANA timezone in effect (DEFAULT_TIMEZONE when none is set)'),
  timezone_set: z.boolean().describe('False when the timezone is the default, not chosen'),
  locale: z.string().nullable(),
  telegram_chat_id: z.string().nullable(),
  facts: z.record(z.string(), z.string()).describe('What the assistant keeps about the user'),
});

const profileChange = z
  .object({
    display_name: visibleText(z.string().trim().min(1).max(100)).nullable().optional(),
    timezone: timezoneName('Asia/Seoul, UTC').nullable().optional(),
    locale: localeTag.nullable().optional(),
    telegram_chat_id: z
      .union([z.string(), z.number().int()])
      .transform(String)
      .pipe(
        z.string().regex(/^(-?\d{1,20}|@[A-Za-z]\w{4,31})$/, {
          message: 'must be a Telegram chat id (a number) or @channelname',
        }),
      )
      .nullable()
      .optional(),
  })
  .strict()
  .describe('Fields to change; a field left out stays, null clears it');

export function registerUserRoutes(app: App, profiles: ProfileService): void {
  const params = z.object({ user_id: userIdSchema });
  app.get(
    '/users/:user_id/profile',
    {
      schema: {
        summary: "Read a user's profile",
        tags: ['users'],
        params,
        response: { 200: profileSchema, ...errorResponses(...PER_USER, 422) },
      },
    },
    async (request) => toBody(request.params.user_id, await profiles.get(request.params.user_id)),
  );

  app.put(
    '/users/:user_id/profile',
    {
      schema: {
        summary: "Change a user's profile (the one the assistant keeps)",
        tags: ['users'],
        params,
        body: profileChange,
        response: {
          200: profileSchema,
          ...errorResponses(...PER_USER, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const { display_name, timezone, locale, telegram_chat_id } = request.body;
      const profile = await profiles.update(request.params.user_id, {
        displayName: display_name,
        timezone,
        locale,
        telegramChatId: telegram_chat_id,
      });
      return toBody(request.params.user_id, profile);
    },
  );

  app.post(
    '/users/:user_id/telegram-link',
    {
      schema: {
        summary: 'Issue a one-time code that links a Telegram chat to this user',
        description:
          'Send the bot `/start <code>` (or open the deep link) within an hour. A new code ' +
          'replaces the previous one. Needs TELEGRAM_POLLING=true on the server.',
        tags: ['users'],
        params,
        response: {
          200: z.object({
            code: z.string(),
            command: z.string(),
            deep_link: z.string().nullable(),
            expires_at: z.string(),
          }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => {
      const link = await profiles.issueLinkCode(request.params.user_id);
      return {
        code: link.code,
        command: link.command,
        deep_link: link.deepLink,
        expires_at: link.expiresAt.toISOString(),
      };
    },
  );
}

function toBody(userId: string, profile: ProfileView) {
  return {
    user_id: userId,
    display_name: profile.displayName ?? null,
    timezone: profile.effectiveTimezone,
    timezone_set: Boolean(profile.timezone),
    locale: profile.locale ?? null,
    telegram_chat_id: profile.telegramChatId,
    facts: profile.facts ?? {},
  };
}
