import { useEffect, useState } from 'preact/hooks';
import {
  conversationHref,
  type SearchHit,
  searchConversations,
  selectVersion,
} from './conversations-api.ts';
import { t } from './i18n.ts';
import { LoadFailed } from './load.tsx';

/** How long typing pauses before the search is sent. */
const TYPING_MS = 250;

/**
 * The words of past questions and answers (every conversation, every version): each hit shows
 * its snippet and opens its conversation at that turn, made the active version first.
 */
export function ConversationSearch(props: {
  user: string;
  query: string;
  onQuery: (query: string) => void;
  onOpen: () => void;
}) {
  /** The hits, and the words they are for (the list shows only the current words' hits). */
  const [found, setFound] = useState<
    { query: string; hits: SearchHit[]; older: string | null } | undefined
  >();
  const [failure, setFailure] = useState<string | undefined>();
  /** Why the search could not be made: said, with "Try again" (else only the raw failure). */
  const [searchFailure, setSearchFailure] = useState<string | undefined>();
  /** Grows with each "Try again": the same words are searched again. */
  const [attempt, setAttempt] = useState(0);
  const query = props.query.trim();
  const hits = found?.query === query ? found.hits : undefined;

  useEffect(() => {
    if (!query) return;
    const controller = new AbortController();
    const timer = setTimeout(() => {
      setSearchFailure(undefined);
      searchConversations(props.user, query, undefined, controller.signal).then(
        (page) => {
          setFound({ query, hits: page.results, older: page.next_before });
          setFailure(undefined);
        },
        (error: Error) => controller.signal.aborted || setSearchFailure(error.message),
      );
    }, TYPING_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [props.user, query, attempt]);

  const more = async () => {
    if (!found?.older) return;
    try {
      const page = await searchConversations(props.user, found.query, found.older);
      setFound((shown) =>
        shown?.query === found.query
          ? { ...shown, hits: [...shown.hits, ...page.results], older: page.next_before }
          : shown,
      );
    } catch (error) {
      setFailure((error as Error).message);
    }
  };

  const open = async (event: Event, hit: SearchHit) => {
    event.preventDefault();
    try {
      if (!hit.on_path) await selectVersion(props.user, hit.conversation_id, hit.run_id);
      location.hash = conversationHref(hit.conversation_id, hit.run_id);
      props.onOpen();
    } catch (error) {
      setFailure((error as Error).message);
    }
  };

  return (
    <>
      <div class="search">
        <input
          type="search"
          aria-label={t.searchConversations}
          placeholder={t.searchConversations}
          value={props.query}
          // No maxLength: it counts UTF-16 units, the server characters (200 of them).
          onInput={(e) => props.onQuery((e.target as HTMLInputElement).value)}
        />
      </div>
      {query && (
        <LoadFailed
          what={t.searchNotLoaded}
          error={searchFailure}
          onRetry={() => setAttempt((n) => n + 1)}
        />
      )}
      {failure && (
        <p role="alert" class="error">
          {failure}
        </p>
      )}
      {query && hits && (
        <ul class="hits" aria-label={t.searchResults}>
          {hits.length === 0 && <li class="muted">{t.noResults}</li>}
          {hits.map((hit) => (
            <li key={`${hit.run_id}-${hit.role}`}>
              <a
                href={conversationHref(hit.conversation_id, hit.run_id)}
                onClick={(e) => open(e, hit)}
              >
                <strong>{hit.title || t.untitled}</strong>
                <span class="snippet">{hit.snippet}</span>
              </a>
            </li>
          ))}
        </ul>
      )}
      {hits && found?.older && (
        <button type="button" class="link" onClick={more}>
          {t.moreResults}
        </button>
      )}
    </>
  );
}
