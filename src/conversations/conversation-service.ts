import type { ChatConversations } from '../assistant/chat-service.ts';
import type { UserChatLock } from '../assistant/user-chat-lock.ts';
import { AppError, notFound } from '../errors.ts';
import type {
  Conversation,
  ConversationRepository,
  ListCursor,
} from '../storage/conversation-repository.ts';
import type {
  ConversationSearchRepository,
  SearchHit,
} from '../storage/conversation-search-repository.ts';
import type { HistoryRepository, StoredTurn } from '../storage/history-repository.ts';
import type { ExportedMessage, TurnRepository } from '../storage/turn-repository.ts';
import { searchQuery } from './search-query.ts';
import { snippetOf } from './snippet.ts';

export interface ConversationServiceDependencies {
  conversations: ConversationRepository;
  history: HistoryRepository;
  turns: TurnRepository;
  search: ConversationSearchRepository;
  /** Whose turn it is to chat: the tree of a user's turns changes only in that turn. */
  lock: UserChatLock;
  /** CONVERSATIONS_PER_USER: how many a user may keep. */
  perUser: number;
  /** Deletes the conversation memories (CONV_RAG_ENABLED) that came from these runs. */
  forgetMemories?: ((userId: string, runIds: readonly string[]) => Promise<number>) | undefined;
}

/** What a chat asks of the conversation it goes to (POST /chat's fields). */
export interface ChatTarget {
  conversationId?: string | undefined;
  /** The turn the question follows; null: a new first question. */
  parent?: string | null | undefined;
  /** A turn the question is a new version of (it follows what that turn followed). */
  regenerate?: string | undefined;
}

/** Where a chat goes, checked: the conversation and the turn it follows (undefined: the leaf). */
export interface ChatPlace {
  conversationId: string;
  parentRunId: string | null | undefined;
}

export interface SearchResult extends SearchHit {
  snippet: string;
}

const noConversation = () => notFound('No such conversation.');
const noTurn = () => notFound('No such turn in this conversation.');
/** Nothing waits for a tree change but the user's own chats. */
const NEVER = new AbortController().signal;

/**
 * A user's conversations: many per user, one current (where a chat without
 * `conversation_id` goes, shared by the web client and the REST API), each a tree of turns
 * whose active path is what the assistant sees. Every method takes the user: a conversation of
 * another user is not found (404), never forbidden, so ids reveal nothing.
 */
export class ConversationService implements ChatConversations {
  readonly #deps: ConversationServiceDependencies;

  constructor(deps: ConversationServiceDependencies) {
    this.#deps = deps;
  }

  current(userId: string): Promise<string> {
    return this.#deps.conversations.current(userId);
  }

  activate(conversationId: string, runId: string): Promise<string | undefined> {
    return this.#deps.turns.activate(conversationId, runId);
  }

  /**
   * Checks where a chat goes before its stream starts (an unknown conversation or turn is a
   * 404 then, not an error event): a named conversation becomes the current one.
   * `knownCurrent` is the current conversation if the caller read it already (the chat's
   * admission does, in the same statement); null or undefined: it is read, or made.
   */
  async placeChat(
    userId: string,
    target: ChatTarget,
    knownCurrent?: string | null,
  ): Promise<ChatPlace> {
    const { conversations } = this.#deps;
    const named = target.conversationId;
    if (named === undefined) {
      const conversationId = knownCurrent ?? (await conversations.current(userId));
      return this.#turnPlace(conversationId, target);
    }
    // The turn is checked before the conversation becomes current: a 404 changes nothing.
    const namesTurn = target.regenerate !== undefined || typeof target.parent === 'string';
    if (namesTurn && !(await conversations.get(userId, named))) throw noConversation();
    const place = await this.#turnPlace(named, target);
    if (!(await conversations.makeCurrent(userId, named))) throw noConversation();
    return place;
  }

  /** Where in the conversation's tree the chat goes; a turn not in it is a 404. */
  async #turnPlace(conversationId: string, target: ChatTarget): Promise<ChatPlace> {
    const { turns } = this.#deps;
    if (target.regenerate !== undefined) {
      const turn = await turns.question(conversationId, target.regenerate);
      if (!turn) throw noTurn();
      return { conversationId, parentRunId: turn.parentRunId };
    }
    if (typeof target.parent === 'string') {
      if (!(await turns.question(conversationId, target.parent))) throw noTurn();
    }
    return { conversationId, parentRunId: target.parent };
  }

  /** Clears the current conversation's turns (spec §4: a user with none is not an error). */
  async reset(userId: string): Promise<void> {
    await this.#deps.conversations.clearCurrent(userId);
  }

  /** The current conversation's turns older than `before`, newest first (GET …/history). */
  async currentTurns(
    userId: string,
    before: string | undefined,
    limit: number,
  ): Promise<StoredTurn[]> {
    const id = await this.#deps.conversations.currentId(userId);
    return id === undefined ? [] : this.#deps.history.turns(id, before, limit);
  }

  /** How many conversations a user may keep (CONVERSATIONS_PER_USER). */
  get perUser(): number {
    return this.#deps.perUser;
  }

  /** A new conversation: the current one, unless a door keeps its own (Telegram). */
  async create(userId: string, title: string | undefined, current = true): Promise<Conversation> {
    const { conversations, perUser } = this.#deps;
    const created = await conversations.create(userId, title, current, perUser);
    if (!created) {
      throw new AppError(
        'conversations_limit',
        422,
        `You keep ${perUser} conversations, the most this server allows: delete some to start a new one.`,
      );
    }
    return created;
  }

  /** The conversation if it is the user's. */
  find(userId: string, id: string): Promise<Conversation | undefined> {
    return this.#deps.conversations.get(userId, id);
  }

  list(userId: string, after: ListCursor | undefined, limit: number) {
    return this.#deps.conversations.list(userId, after, limit);
  }

  async get(userId: string, id: string): Promise<Conversation> {
    const conversation = await this.#deps.conversations.get(userId, id);
    if (!conversation) throw noConversation();
    return conversation;
  }

  /** A page of the active path, newest turn first. */
  async read(
    userId: string,
    id: string,
    before: string | undefined,
    limit: number,
  ): Promise<{
    conversation: Conversation;
    turns: StoredTurn[];
    /** With the newest page: the answer being written in it now, if any. */
    running: { runId: string; question: string } | undefined;
  }> {
    const conversation = await this.get(userId, id);
    const [turns, running] = await Promise.all([
      this.#deps.history.turns(id, before, limit),
      before === undefined ? this.#deps.conversations.running(userId, id) : undefined,
    ]);
    // Stored already (its end is stored up to a second later): a turn, not an answer to follow.
    const ended = running && turns.some((turn) => turn.runId === running.runId);
    return { conversation, turns, running: ended ? undefined : running };
  }

  async update(
    userId: string,
    id: string,
    change: { title?: string | undefined; pinned?: boolean | undefined },
  ): Promise<Conversation> {
    const updated = await this.#deps.conversations.update(userId, id, change);
    if (!updated) throw noConversation();
    return updated;
  }

  /** Shows another version: the path through that turn becomes the active one. */
  async select(userId: string, id: string, runId: string): Promise<string> {
    await this.get(userId, id);
    const leaf = await this.#inTurn(userId, () => this.#deps.turns.activate(id, runId));
    if (leaf === undefined) throw noTurn();
    return leaf;
  }

  /**
   * Deletes one conversation (`id`) or all of the user's, every version of every turn, and
   * the memories that came from them. Returns how many conversations went.
   */
  async delete(userId: string, id: string | undefined): Promise<number> {
    if (id !== undefined) await this.get(userId, id);
    return this.#inTurn(userId, async () => {
      const runIds = await this.#deps.conversations.runIds(userId, id);
      // Memories first: a failure leaves the conversation to delete again, not orphans.
      await this.#deps.forgetMemories?.(userId, runIds);
      return this.#deps.conversations.delete(userId, id);
    });
  }

  /** Every message of a conversation, every version, oldest first, a page at a time. */
  async exportMessages(
    userId: string,
    id: string,
  ): Promise<{ conversation: Conversation; messages: AsyncGenerator<ExportedMessage[]> }> {
    const conversation = await this.get(userId, id);
    return { conversation, messages: this.#deps.turns.messages(id) };
  }

  /** Questions and answers of every conversation with all the words searched, newest first. */
  async search(
    userId: string,
    text: string,
    before: string | undefined,
    limit: number,
  ): Promise<SearchResult[]> {
    const query = searchQuery(text);
    if (query === undefined) return [];
    const hits = await this.#deps.search.search(userId, query, before, limit);
    return hits.map((hit) => ({ ...hit, snippet: snippetOf(hit.text, text) }));
  }

  /** Changes to a user's tree of turns wait for their chat under way (and it for them). */
  async #inTurn<T>(userId: string, work: () => Promise<T>): Promise<T> {
    const turn = await this.#deps.lock.acquire(userId, NEVER);
    try {
      return await work();
    } finally {
      await turn.release();
    }
  }
}
