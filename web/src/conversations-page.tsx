import { useEffect, useRef, useState } from 'preact/hooks';
import { ChatPage } from './chat.tsx';
import { ConversationList } from './conversation-list.tsx';
import { conversationHref, createConversation, listConversations } from './conversations-api.ts';
import { t } from './i18n.ts';
import { LoadFailed } from './load.tsx';

/** Where the chat page is: a conversation (`#/c/<id>`), perhaps at one turn (`#/c/<id>/<run_id>`). */
export interface ChatRoute {
  conversation: string | undefined;
  turn: string | undefined;
  /** Grows with every change of address, so following the same link again opens it again. */
  visit: number;
}

/**
 * The list of conversations beside the open one (behind a button on a narrow screen). The
 * page without a conversation in its address opens the current one (where the user last
 * chatted), else the newest, else a new one.
 */
export function ConversationsPage(props: { user: string; route: ChatRoute }) {
  const { conversation } = props.route;
  // While "Chat" looks for the current conversation (`#/chat`), the one open before stays on
  // screen, its draft and focus with it: removed and mounted again, its draft was lost and
  // words typed meanwhile went nowhere. One deleted is cleared first, so it is not shown again.
  const lastShown = useRef<ChatRoute | undefined>(undefined);
  const lastRoute = useRef<ChatRoute | undefined>(undefined);
  if (props.route !== lastRoute.current) {
    // "Chat" found the conversation on screen: it stays as it is. Opened again (another
    // visit), it was cleared and loaded afresh, and a question sent while "Chat" looked was
    // cut off: one still on its way on a slow network was gone, its answer never shown.
    const looked = lastRoute.current !== undefined && !lastRoute.current.conversation;
    const found = looked && !props.route.turn && lastShown.current?.conversation === conversation;
    lastRoute.current = props.route;
    if (conversation && !found) lastShown.current = props.route;
  }
  const shown = lastShown.current;
  const [changed, setChanged] = useState(0);
  /**
   * Conversations a question was sent in from this page. The list learns of a question only
   * once its turn is stored and the list loaded again (seconds on a slow network): meanwhile
   * "New conversation" took the one just asked in for unused, and stayed in it.
   */
  const asked = useRef(new Set<string>());
  const [listOpen, setListOpen] = useState(false);
  /** Why the conversation to open could not be found or made: said, with "Try again". */
  const [failure, setFailure] = useState<string | undefined>();
  /** Grows with each "Try again": the conversation to open is looked for again. */
  const [attempt, setAttempt] = useState(0);
  /**
   * The conversation on screen when "New conversation" had to make one, until another opens.
   * Shown meanwhile (a round trip, seconds on a slow network), its message box was live: a
   * question asked then went to it, or (cut off by the move) nowhere, and the new one opened
   * empty.
   */
  const [leaving, setLeaving] = useState<string | undefined>();
  useEffect(() => {
    if (leaving !== undefined && leaving !== conversation) setLeaving(undefined);
  }, [conversation]);

  useEffect(() => {
    setFailure(undefined);
    if (conversation) return;
    // The user may go to another page meanwhile: then this page no longer moves them. (The
    // address is compared too: a link followed changes it before its hashchange event comes.)
    let left = false;
    const from = location.hash;
    const open = async () => {
      const all = (await listConversations(props.user)).conversations;
      const chosen = all.find((c) => c.current) ?? all[0] ?? (await createConversation(props.user));
      if (!left && location.hash === from) location.replace(conversationHref(chosen.id));
    };
    open().catch((error: Error) => left || setFailure(error.message));
    return () => {
      left = true;
    };
  }, [props.user, conversation, attempt]);

  return (
    <div class={`conversations-page${listOpen ? ' list-open' : ''}`}>
      <button
        type="button"
        class="list-toggle"
        aria-expanded={listOpen}
        aria-controls="conversation-list"
        onClick={() => setListOpen(!listOpen)}
      >
        {t.conversations}
      </button>
      <ConversationList
        id="conversation-list"
        user={props.user}
        open={conversation}
        changed={changed}
        asked={asked.current}
        onChosen={() => setListOpen(false)}
        onStarting={(starting) => setLeaving(starting ? shown?.conversation : undefined)}
      />
      <LoadFailed
        what={t.conversationNotOpened}
        error={failure}
        onRetry={() => {
          setAttempt((n) => n + 1);
          setChanged((n) => n + 1); // the list, which failed with it, is loaded again too
        }}
      />
      {shown?.conversation && (
        <ChatPage
          user={props.user}
          conversation={shown.conversation}
          focus={shown.turn}
          visit={shown.visit}
          starting={leaving !== undefined && leaving === shown.conversation}
          onActivity={() => setChanged((n) => n + 1)}
          onAsked={(id) => asked.current.add(id)}
          onDeleted={() => {
            lastShown.current = undefined;
          }}
        />
      )}
    </div>
  );
}
