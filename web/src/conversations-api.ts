/** The conversations API as the web client uses it (GET/POST/PATCH/DELETE /users/{id}/conversations…). */
import { api, enc } from './api.ts';

export interface Conversation {
  id: string;
  title: string;
  pinned: boolean;
  current: boolean;
  updated_at: string;
  preview?: string;
}

/** A turn among its versions (edits and regenerations of the same question). */
export interface Version {
  index: number;
  count: number;
  previous: string | null;
  next: string | null;
}

export interface StoredTurn {
  run_id: string;
  question: string;
  answer: string;
  interrupted: boolean;
  feedback: { score: number; comment: string | null } | null;
  version: Version;
}

export interface SearchHit {
  conversation_id: string;
  title: string;
  run_id: string;
  role: 'user' | 'assistant';
  snippet: string;
  on_path: boolean;
}

const base = (user: string) => `/users/${enc(user)}/conversations`;

/** A page of the list, pinned first, then newest activity; `next_cursor` asks for the next. */
export const listConversations = (user: string, cursor?: string) =>
  api<{ conversations: Conversation[]; next_cursor: string | null }>(
    `${base(user)}?limit=50${cursor ? `&cursor=${enc(cursor)}` : ''}`,
  );

export const createConversation = (user: string) =>
  api<Conversation>(base(user), { method: 'POST', body: {} });

export const readConversation = (
  user: string,
  id: string,
  before: string | undefined,
  limit = 20,
) =>
  api<{
    conversation: Conversation;
    turns: StoredTurn[];
    next_before: string | null;
    /** An answer being written in it now (newest page only), asked from any device. */
    running: { run_id: string; question: string } | null;
  }>(`${base(user)}/${enc(id)}?limit=${limit}${before ? `&before=${enc(before)}` : ''}`);

export const changeConversation = (
  user: string,
  id: string,
  change: { title?: string; pinned?: boolean },
) => api<Conversation>(`${base(user)}/${enc(id)}`, { method: 'PATCH', body: change });

export const deleteConversation = (user: string, id: string) =>
  api(`${base(user)}/${enc(id)}`, { method: 'DELETE' });

/** Makes the path through `runId` the active one (another version of a turn). */
export const selectVersion = (user: string, id: string, runId: string) =>
  api(`${base(user)}/${enc(id)}/select`, { method: 'POST', body: { run_id: runId } });

/** A page of hits, newest first; `next_before` asks for older ones. */
export const searchConversations = (
  user: string,
  q: string,
  before: string | undefined,
  signal?: AbortSignal,
) =>
  api<{ results: SearchHit[]; next_before: string | null }>(
    `${base(user)}/search?q=${enc(q)}&limit=20${before ? `&before=${enc(before)}` : ''}`,
    signal ? { signal } : {},
  );

/** The page address of a conversation, optionally opened at one turn. */
export const conversationHref = (id: string, runId?: string) =>
  `#/c/${id}${runId ? `/${runId}` : ''}`;
