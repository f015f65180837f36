import type pg from 'pg';

/**
 * What a user's writes take turns at, each the first key of a two-key advisory lock whose
 * second is the user id's hash (two-key locks are apart from the one-key ones used elsewhere).
 * Kept in one place so that no two can share a key. Used where a write must see the user's
 * earlier ones: on PostgreSQL (read committed) concurrent requests each count without the
 * others' uncommitted rows, so a per-user bound checked in one statement still let them all
 * through (the embedded engine has one connection, and takes them one at a time anyway).
 */
const TURNS = {
  automationCreate: 0x6175746f, // "auto"
  automationRun: 0x6175746e,
  conversationCreate: 0x636f6e76, // "conv"
  graphAdd: 0x67727068, // "grph"
  reminderCreate: 0x726d6e64, // "rmnd"
} as const;

/** Waits for the user's turn at `what`, held until the transaction of `client` ends. */
export async function takeUserTurn(
  client: pg.PoolClient,
  what: keyof typeof TURNS,
  userId: string,
): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [TURNS[what], userId]);
}
