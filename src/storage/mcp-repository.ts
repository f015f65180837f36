import { orm } from './orm.ts';

const { and, eq, isNotNull, isNull, ne, or, sql } = orm;

import type { Db } from './database.ts';
import { mcpAlwaysAllow, mcpServers, mcpServerUsers, toolApprovals } from './schema.ts';
import { storableValue } from './storable-text.ts';

/**
 * Names in code-point order, as on the embedded engine (C), whatever collation the server's
 * database was created with (an ICU or en_US one puts 'alpha' before 'Beta').
 */
const byCodePoints = (column: typeof mcpServers.name | typeof mcpAlwaysAllow.tool) =>
  sql`${column} COLLATE "C"`;

export type McpServerRecord = typeof mcpServers.$inferSelect;
export type NewMcpServer = typeof mcpServers.$inferInsert;
export type McpServerChange = Partial<
  Pick<McpServerRecord, 'enabled' | 'restricted' | 'trusted' | 'sharedProcess' | 'approvalTools'>
>;

/** A server as one user has it: whether they may use it, switched it on, gave a credential. */
export interface UserServer {
  server: McpServerRecord;
  allowed: boolean;
  enabled: boolean;
  /** The encrypted credential and the header it goes in, when the user gave one. */
  credential: { header: string; sealed: string } | undefined;
  /** The server refused this user at their last connection (HTTP 401 or 403): why, since when. */
  refused: { reason: string; since: Date } | undefined;
}

export type ApprovalDecision = 'approve' | 'deny' | 'always' | 'expired';
export type ApprovalRecord = typeof toolApprovals.$inferSelect;

/** The MCP servers, each user's relation to them, and the tool calls awaiting a decision. */
export class McpRepository {
  readonly #db: Db;
  /**
   * The enabled servers with one user's relation to each, read by every chat while any is
   * enabled: built once and named (planned once per connection), since as Drizzle's query
   * built and planned each time it cost ~0.3 ms of a chat (bench/RESULTS.md, issue 31).
   */
  readonly #enabledForUser;

  /** MCP_APPROVAL_TIMEOUT_SECONDS: no decision is taken on a question older than this. */
  readonly #approvalMaxAgeSeconds: number | undefined;

  constructor(db: Db, options: { approvalMaxAgeSeconds?: number } = {}) {
    this.#db = db;
    this.#approvalMaxAgeSeconds = options.approvalMaxAgeSeconds;
    this.#enabledForUser = db
      .select({ server: mcpServers, relation: mcpServerUsers })
      .from(mcpServers)
      .leftJoin(
        mcpServerUsers,
        and(
          eq(mcpServerUsers.serverId, mcpServers.id),
          eq(mcpServerUsers.userId, sql.placeholder('userId')),
        ),
      )
      .where(eq(mcpServers.enabled, true))
      .orderBy(byCodePoints(mcpServers.name))
      .prepare('parley-mcp-for-user');
  }

  async create(server: NewMcpServer): Promise<McpServerRecord | undefined> {
    const [row] = await this.#db
      .insert(mcpServers)
      .values(server)
      .onConflictDoNothing({ target: mcpServers.name })
      .returning();
    return row;
  }

  async list(): Promise<McpServerRecord[]> {
    return this.#db.select().from(mcpServers).orderBy(byCodePoints(mcpServers.name));
  }

  async get(id: string): Promise<McpServerRecord | undefined> {
    const [row] = await this.#db.select().from(mcpServers).where(eq(mcpServers.id, id));
    return row;
  }

  async change(id: string, change: McpServerChange): Promise<McpServerRecord | undefined> {
    const [row] = await this.#db
      .update(mcpServers)
      .set({ ...change, updatedAt: new Date() })
      .where(eq(mcpServers.id, id))
      .returning();
    return row;
  }

  async delete(id: string): Promise<boolean> {
    const rows = await this.#db
      .delete(mcpServers)
      .where(eq(mcpServers.id, id))
      .returning({ id: mcpServers.id });
    return rows.length > 0;
  }

  /**
   * Records a listing of the server's tools. The first listing of an enabled server becomes
   * the approved one (the administrator enabled it knowing its command or URL); a later one
   * with another fingerprint is only seen, which holds the server until it is approved.
   */
  async recordListing(id: string, fingerprint: string, listed: unknown[]): Promise<void> {
    // The server's own text: a NUL in it would fail the write, and with it every chat that
    // offers the server. The fingerprint is of what it listed, unchanged.
    const tools = storableValue(listed);
    await this.#db
      .update(mcpServers)
      .set({
        seenFingerprint: fingerprint,
        seenTools: tools,
        approvedFingerprint: sql`coalesce(${mcpServers.approvedFingerprint}, ${fingerprint})`,
        approvedTools: sql`coalesce(${mcpServers.approvedTools}, ${JSON.stringify(tools)}::jsonb)`,
      })
      .where(eq(mcpServers.id, id));
  }

  /** Accepts the listing last seen, only if it is still the one the administrator looked at. */
  async approveListing(id: string, fingerprint: string): Promise<boolean> {
    const rows = await this.#db
      .update(mcpServers)
      .set({
        approvedFingerprint: mcpServers.seenFingerprint,
        approvedTools: mcpServers.seenTools,
        updatedAt: new Date(),
      })
      .where(and(eq(mcpServers.id, id), eq(mcpServers.seenFingerprint, fingerprint)))
      .returning({ id: mcpServers.id });
    return rows.length > 0;
  }

  /** Why the server is down (null: it answered since), for the administrator. */
  async recordFailure(id: string, reason: string | null, stderr: string | null): Promise<void> {
    await this.#db
      .update(mcpServers)
      .set({
        lastError: reason,
        // The server's stderr, its own bytes: a NUL would fail the write (the status unseen).
        lastStderr: stderr === null ? null : storableValue(stderr),
        lastErrorAt: reason ? new Date() : null,
      })
      .where(eq(mcpServers.id, id));
  }

  /**
   * The state of the server's latest listing (cut, stale since), for the status routes. Every
   * user's connection reports its listing: the row is written only when the state changes.
   */
  async recordListingState(
    id: string,
    state: { cut: boolean; staleSince: Date | null },
  ): Promise<void> {
    await this.#db
      .update(mcpServers)
      .set({ listingCut: state.cut, listingStaleSince: state.staleSince })
      .where(
        and(
          eq(mcpServers.id, id),
          or(
            ne(mcpServers.listingCut, state.cut),
            state.staleSince === null
              ? isNotNull(mcpServers.listingStaleSince)
              : or(
                  isNull(mcpServers.listingStaleSince),
                  ne(mcpServers.listingStaleSince, state.staleSince),
                ),
          ),
        ),
      );
  }

  /** Every enabled server with this user's relation to it. */
  async forUser(userId: string): Promise<UserServer[]> {
    const rows = await this.#enabledForUser.execute({ userId });
    return rows.map(({ server, relation }) => ({
      server,
      allowed: relation?.allowed ?? !server.restricted,
      enabled: relation?.enabled ?? true,
      credential:
        relation?.credential && relation.credentialHeader
          ? { header: relation.credentialHeader, sealed: relation.credential }
          : undefined,
      refused:
        relation?.refusedReason && relation.refusedAt
          ? { reason: relation.refusedReason, since: relation.refusedAt }
          : undefined,
    }));
  }

  /**
   * The server refused this user (their credential, or its absence), or took them again
   * (null). The first refusal in a row keeps its time; taking them writes only where a
   * refusal was stored, so a working connection costs no write.
   */
  async recordRefusal(serverId: string, userId: string, reason: string | null): Promise<void> {
    if (reason === null) {
      await this.#db
        .update(mcpServerUsers)
        .set({ refusedReason: null, refusedAt: null })
        .where(
          and(
            eq(mcpServerUsers.serverId, serverId),
            eq(mcpServerUsers.userId, userId),
            isNotNull(mcpServerUsers.refusedReason),
          ),
        );
      return;
    }
    await this.#db
      .insert(mcpServerUsers)
      .values({ serverId, userId, refusedReason: reason, refusedAt: new Date() })
      .onConflictDoUpdate({
        target: [mcpServerUsers.serverId, mcpServerUsers.userId],
        set: {
          refusedReason: reason,
          refusedAt: sql`coalesce(${mcpServerUsers.refusedAt}, now())`,
        },
      });
  }

  /** The administrator's part of a user's relation: null puts back the server's default. */
  async setAllowed(serverId: string, userId: string, allowed: boolean | null): Promise<void> {
    await this.#upsertRelation(serverId, userId, { allowed });
  }

  /** The user's part: their switch, and their credential (null removes it). */
  async setUserChoice(
    serverId: string,
    userId: string,
    choice: { enabled?: boolean; credential?: { header: string; sealed: string } | null },
  ): Promise<void> {
    const set: Partial<typeof mcpServerUsers.$inferInsert> = {};
    if (choice.enabled !== undefined) set.enabled = choice.enabled;
    if (choice.credential !== undefined) {
      set.credentialHeader = choice.credential?.header ?? null;
      set.credential = choice.credential?.sealed ?? null;
      // Whether the server takes the new one is known at its next use.
      set.refusedReason = null;
      set.refusedAt = null;
    }
    await this.#upsertRelation(serverId, userId, set);
  }

  async #upsertRelation(
    serverId: string,
    userId: string,
    set: Partial<typeof mcpServerUsers.$inferInsert>,
  ): Promise<void> {
    await this.#db
      .insert(mcpServerUsers)
      .values({ serverId, userId, ...set })
      .onConflictDoUpdate({
        target: [mcpServerUsers.serverId, mcpServerUsers.userId],
        set: { ...set, updatedAt: new Date() },
      });
  }

  async alwaysAllowed(userId: string, serverId: string, tool: string): Promise<boolean> {
    const rows = await this.#db
      .select({ tool: mcpAlwaysAllow.tool })
      .from(mcpAlwaysAllow)
      .where(
        and(
          eq(mcpAlwaysAllow.userId, userId),
          eq(mcpAlwaysAllow.serverId, serverId),
          eq(mcpAlwaysAllow.tool, tool),
        ),
      );
    return rows.length > 0;
  }

  async alwaysAllowedTools(userId: string, serverId: string): Promise<string[]> {
    const rows = await this.#db
      .select({ tool: mcpAlwaysAllow.tool })
      .from(mcpAlwaysAllow)
      .where(and(eq(mcpAlwaysAllow.userId, userId), eq(mcpAlwaysAllow.serverId, serverId)))
      .orderBy(byCodePoints(mcpAlwaysAllow.tool));
    return rows.map((row) => row.tool);
  }

  async forgetAlwaysAllowed(userId: string, serverId: string): Promise<void> {
    await this.#db
      .delete(mcpAlwaysAllow)
      .where(and(eq(mcpAlwaysAllow.userId, userId), eq(mcpAlwaysAllow.serverId, serverId)));
  }

  async createApproval(approval: typeof toolApprovals.$inferInsert): Promise<void> {
    // The model's arguments, kept for the record: a NUL in them (which JSON in PostgreSQL
    // cannot hold) must not keep the question from being asked.
    await this.#db
      .insert(toolApprovals)
      .values({ ...approval, arguments: storableValue(approval.arguments) });
  }

  async approval(id: string): Promise<ApprovalRecord | undefined> {
    const [row] = await this.#db.select().from(toolApprovals).where(eq(toolApprovals.id, id));
    return row;
  }

  /**
   * Decides a call still waiting (the first decision wins, an expired one cannot be
   * revived); "always" also records the user's standing permission. Undefined: no such
   * approval of this user; otherwise the decision in force.
   */
  async decide(
    userId: string,
    id: string,
    decision: ApprovalDecision,
  ): Promise<ApprovalDecision | undefined> {
    // Past its timeout no run waits for the question any more (one whose process died
    // never marked it): a late decision finds it expired, by the database's clock.
    const maxAge = this.#approvalMaxAgeSeconds;
    const fresh =
      maxAge === undefined
        ? undefined
        : sql`${toolApprovals.createdAt} > now() - make_interval(secs => ${maxAge})`;
    return this.#db.transaction(async (tx) => {
      const undecided = and(
        eq(toolApprovals.id, id),
        eq(toolApprovals.userId, userId),
        isNull(toolApprovals.decision),
      );
      const [decided] = await tx
        .update(toolApprovals)
        .set({ decision, decidedAt: new Date() })
        .where(decision === 'expired' ? undecided : and(undecided, fresh))
        .returning();
      if (decided) {
        if (decision === 'always') {
          await tx
            .insert(mcpAlwaysAllow)
            .values({ userId, serverId: decided.serverId, tool: decided.tool })
            .onConflictDoNothing();
        }
        return decision;
      }
      if (fresh) {
        const [expired] = await tx
          .update(toolApprovals)
          .set({ decision: 'expired', decidedAt: new Date() })
          .where(undecided)
          .returning({ decision: toolApprovals.decision });
        if (expired) return 'expired';
      }
      const [existing] = await tx
        .select({ decision: toolApprovals.decision })
        .from(toolApprovals)
        .where(and(eq(toolApprovals.id, id), eq(toolApprovals.userId, userId)));
      return existing?.decision ?? undefined;
    });
  }
}
