import type { Update } from 'grammy/types';
import { z } from 'zod';

/**
 * The fields of an update that Parley reads, with the types it reads them as: an update that
 * does not match is not handled. Telegram always sends them so; a proxy in front, a test tool
 * or a bug could send anything, and before this one such update in a batch failed the batch
 * after every update in it was taken, so the messages behind it were never answered. Fields
 * not named here are let through unread.
 */
const chat = z.looseObject({ id: z.number(), type: z.string() });
const user = z.looseObject({ id: z.number(), language_code: z.string().optional() });
const photoSize = z.looseObject({
  file_id: z.string(),
  width: z.number(),
  height: z.number(),
  file_size: z.number().optional(),
});
const message = z.looseObject({
  message_id: z.number(),
  chat,
  from: user.optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  photo: z.array(photoSize).optional(),
  document: z
    .looseObject({
      file_id: z.string(),
      file_name: z.string().optional(),
      file_size: z.number().optional(),
    })
    .optional(),
});
const callbackQuery = z.looseObject({
  id: z.string(),
  from: user,
  // An old message Telegram no longer shows is "inaccessible": its chat and id only.
  message: z.looseObject({ message_id: z.number(), chat }).optional(),
  data: z.string().optional(),
});
const readableUpdate = z.looseObject({
  update_id: z.number(),
  message: message.optional(),
  edited_message: message.optional(),
  callback_query: callbackQuery.optional(),
});

/** Whether Parley can read the update; otherwise the paths of the fields it cannot (no values). */
export function unreadableFields(update: Update): string[] {
  const result = readableUpdate.safeParse(update);
  return result.success ? [] : result.error.issues.map((issue) => issue.path.join('.'));
}
