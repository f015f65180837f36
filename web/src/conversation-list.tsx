import { useEffect, useRef, useState } from 'preact/hooks';
import { ConversationSearch } from './conversation-search.tsx';
import {
  type Conversation,
  conversationHref,
  createConversation,
  listConversations,
} from './conversations-api.ts';
import { t } from './i18n.ts';
import { LoadFailed } from './load.tsx';

/**
 * The user's conversations, pinned first, then by newest activity (the server's order), with
 * "New conversation" and the search over them. `changed` grows whenever the list may have
 * changed (a turn stored, a rename, a pin, a deletion).
 */
export function ConversationList(props: {
  id: string;
  user: string;
  open: string | undefined;
  changed: number;
  /** Conversations a question was sent in from this page, perhaps not yet stored. */
  asked: ReadonlySet<string>;
  /** A conversation was chosen: a narrow screen hides the list again. */
  onChosen: () => void;
  /** A new conversation is being made (true), or could not be (false). */
  onStarting: (starting: boolean) => void;
}) {
  const [conversations, setConversations] = useState<Conversation[] | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  /** Why the list (its first page) could not be loaded: said, with "Try again". */
  const [loadFailure, setLoadFailure] = useState<string | undefined>();
  const [query, setQuery] = useState('');
  /** Where the next page of the list starts (null: none). */
  const [more, setMore] = useState<string | null>(null);

  /**
   * Counts first-page loads. Responses can come back in any order on a slow network: only the
   * newest load's may be shown, and a next page only onto the first page it continues (else a
   * list loaded earlier would hide a rename, or a page be appended twice).
   */
  const loads = useRef(0);
  /**
   * The cursor of the next page being loaded: a second click on "More conversations" before
   * the page came (a slow network) loaded it again, and it was added twice.
   */
  const loadingMore = useRef<string | undefined>(undefined);
  /** The first page, or (with the last page's cursor) the next one after those shown. */
  const load = (cursor?: string) => {
    if (cursor !== undefined && loadingMore.current === cursor) return Promise.resolve();
    const started = cursor ? loads.current : ++loads.current;
    if (cursor !== undefined) loadingMore.current = cursor;
    else setLoadFailure(undefined);
    return listConversations(props.user, cursor).then(
      (page) => {
        if (cursor !== undefined && loadingMore.current === cursor) loadingMore.current = undefined;
        if (started !== loads.current) return;
        setConversations((shown) =>
          cursor ? [...(shown ?? []), ...page.conversations] : page.conversations,
        );
        setMore(page.next_cursor);
        setFailure(undefined);
        setLoadFailure(undefined);
      },
      (error: Error) => {
        if (cursor !== undefined && loadingMore.current === cursor) loadingMore.current = undefined;
        if (started !== loads.current) return;
        // A next page that failed is asked again with "More conversations", still there.
        if (cursor) setFailure(error.message);
        else setLoadFailure(error.message);
      },
    );
  };
  useEffect(() => {
    void load();
  }, [props.user, props.changed]);

  /**
   * A new conversation is being made: pressed again meanwhile, nothing more happens (on a
   * slow network a second was made).
   */
  const starting = useRef(false);
  /**
   * The conversation "New conversation" opened last, until the list loaded after it came:
   * pressed again before then, it is opened again rather than another made. (The press used
   * to wait for that load instead, and on a slow network one right after a question in the
   * new conversation did nothing.)
   */
  const opened = useRef<string | undefined>(undefined);
  const start = async () => {
    if (starting.current) return;
    starting.current = true;
    let id: string;
    try {
      // A conversation never used is opened rather than another made.
      const unused =
        (opened.current && !props.asked.has(opened.current) ? opened.current : undefined) ??
        conversations?.find((c) => !c.title && !c.preview && !props.asked.has(c.id))?.id;
      if (!unused) props.onStarting(true);
      id = unused ?? (await createConversation(props.user)).id;
      opened.current = id;
      setQuery('');
      location.hash = conversationHref(id);
      props.onChosen();
      // Ready for the first question (once a narrow screen has hidden the list).
      setTimeout(() => document.getElementById('message')?.focus());
    } catch (error) {
      props.onStarting(false);
      setFailure((error as Error).message);
      return;
    } finally {
      starting.current = false;
    }
    await load();
    if (opened.current === id) opened.current = undefined;
  };

  return (
    <nav id={props.id} class="conversations" aria-label={t.conversations}>
      <button type="button" class="primary" onClick={start}>
        {t.newConversation}
      </button>
      <ConversationSearch
        user={props.user}
        query={query}
        onQuery={setQuery}
        onOpen={props.onChosen}
      />
      <LoadFailed what={t.conversationsNotLoaded} error={loadFailure} onRetry={() => load()} />
      {failure && (
        <p role="alert" class="error">
          {failure}
        </p>
      )}
      {!query.trim() && (
        <ul class="threads">
          {conversations?.map((conversation) => (
            <li key={conversation.id} class={conversation.pinned ? 'pinned' : undefined}>
              <a
                href={conversationHref(conversation.id)}
                aria-current={conversation.id === props.open ? 'page' : undefined}
                onClick={props.onChosen}
              >
                {conversation.pinned && (
                  <span class="pin" role="img" aria-label={t.pinned}>
                    📌
                  </span>
                )}
                <span class="name">{conversation.title || t.untitled}</span>
              </a>
            </li>
          ))}
        </ul>
      )}
      {!query.trim() && more && (
        <button type="button" class="link" onClick={() => load(more)}>
          {t.moreConversations}
        </button>
      )}
    </nav>
  );
}
