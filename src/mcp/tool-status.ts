import type { UserServer } from '../storage/mcp-repository.ts';
import {
  type LeftOutTool,
  type ListedTool,
  selectTools,
  type ToolLimits,
} from './tool-selection.ts';

/** What a user's chats get of one server's tools, as its status shows it. */
export interface ToolStatus {
  /** Tools in its latest listing (null: never listed yet). */
  listed: number | null;
  offered: number;
  leftOut: LeftOutTool[];
  listingCut: boolean;
  staleSince: Date | null;
}

/**
 * The tools a user's chats offer from each of their servers, chosen as a chat chooses them
 * (selectTools) from the approved listing stored for each server. A server that is switched
 * off, held or down, or that refused this user, offers none, and leaves its place to the
 * others, as in a chat.
 */
export function toolStatus(entries: UserServer[], limits: ToolLimits): Map<string, ToolStatus> {
  const usable = entries.filter(
    ({ server, allowed, enabled, refused }) =>
      allowed &&
      enabled &&
      !refused &&
      server.approvedTools !== null &&
      server.approvedFingerprint === server.seenFingerprint &&
      !server.lastError,
  );
  const selection = selectTools(
    usable.map(({ server }) => ({
      name: server.name,
      tools: (server.approvedTools ?? []) as ListedTool[],
    })),
    limits,
  );
  const status = new Map<string, ToolStatus>();
  for (const { server } of entries) {
    const chosen = selection.get(server.name);
    status.set(server.id, {
      listed: server.seenTools?.length ?? null,
      offered: chosen?.offered.length ?? 0,
      leftOut: chosen?.leftOut ?? [],
      listingCut: server.listingCut,
      staleSince: server.listingStaleSince,
    });
  }
  return status;
}
