import type { UserDataRepository } from '../storage/user-data-repository.ts';

/**
 * A user's data as one JSON document, written piece by piece: the long parts (history, runs)
 * are read a page at a time, so exporting a long history never holds it in memory.
 */
export async function* exportUserData(
  userData: UserDataRepository,
  userId: string,
  now: Date,
): AsyncGenerator<string> {
  const [profile] = await userData.rows('profile', userId);
  yield `{"user_id":${JSON.stringify(userId)},"exported_at":${JSON.stringify(now.toISOString())}`;
  yield `,"profile":${JSON.stringify(profile ?? null)}`;
  yield `,"conversations":${JSON.stringify(await userData.rows('conversations', userId))}`;
  for (const table of ['messages', 'runs', 'tool_approvals'] as const) {
    yield `,${JSON.stringify(table)}:[`;
    let first = true;
    for await (const page of userData.pages(table, userId)) {
      for (const row of page) {
        yield (first ? '' : ',') + JSON.stringify(row);
        first = false;
      }
    }
    yield ']';
  }
  for (const table of [
    'memories',
    'graph',
    'reminders',
    'automations',
    'documents',
    'mcp_servers',
  ] as const) {
    yield `,${JSON.stringify(table)}:${JSON.stringify(await userData.rows(table, userId))}`;
  }
  yield '}\n';
}
