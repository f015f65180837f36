import { useEffect, useState } from 'preact/hooks';
import { ConversationSearch } from './conversation-search.tsx';
import {
  type Conversation,
  conversationHref,
  createConversation,
  listConversations,
} from './conversations-api.ts';
import { t } from './i18n.ts';

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
  /** A conversation was chosen: a narrow screen hides the list again. */
  onChosen: () => void;
}) {
  const [conversations, setConversations] = useState<Conversation[] | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  const [query, setQuery] = useState('');

  const load = () =>
    listConversations(props.user).then(
      (found) => {
        setConversations(found);
        setFailure(undefined);
      },
      (error: Error) => setFailure(error.message),
    );
  useEffect(() => {
    void load();
  }, [props.user, props.changed]);

  const start = async () => {
    try {
      const created = await createConversation(props.user);
      setQuery('');
      location.hash = conversationHref(created.id);
      props.onChosen();
      await load();
    } catch (error) {
      setFailure((error as Error).message);
    }
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
    </nav>
  );
}
