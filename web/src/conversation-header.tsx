import { useState } from 'preact/hooks';
import { type Conversation, changeConversation, deleteConversation } from './conversations-api.ts';
import { t } from './i18n.ts';

/** The open conversation's title, and what can be done to it: rename, pin or unpin, delete. */
export function ConversationHeader(props: {
  user: string;
  conversation: Conversation | undefined;
  onChanged: (conversation: Conversation) => void;
  onDeleted: () => void;
  onFailure: (message: string) => void;
}) {
  const { conversation } = props;
  const [renaming, setRenaming] = useState<string | undefined>();
  // "Chat" while the conversation loads, not a title it may not have.
  const title = conversation ? conversation.title || t.untitled : t.chat;

  const change = async (body: { title?: string; pinned?: boolean }) => {
    if (!conversation) return;
    try {
      props.onChanged(await changeConversation(props.user, conversation.id, body));
      setRenaming(undefined);
    } catch (error) {
      props.onFailure((error as Error).message);
    }
  };
  const remove = async () => {
    if (!conversation || !confirm(t.confirmDeleteConversation(title))) return;
    try {
      await deleteConversation(props.user, conversation.id);
      props.onDeleted();
    } catch (error) {
      props.onFailure((error as Error).message);
    }
  };

  if (renaming !== undefined) {
    return (
      <form
        class="toolbar rename"
        onSubmit={(e) => {
          e.preventDefault();
          if (renaming.trim()) void change({ title: renaming.trim() });
        }}
      >
        <input
          aria-label={t.title}
          value={renaming}
          // No maxLength: it counts UTF-16 units, so 60 held only 30 emoji and a title the
          // model wrote could not be saved again. The server counts characters and says when
          // a title is too long.
          // biome-ignore lint/a11y/noAutofocus: the field the user just asked for
          autoFocus
          onInput={(e) => setRenaming((e.target as HTMLInputElement).value)}
          onKeyDown={(e) => e.key === 'Escape' && setRenaming(undefined)}
        />
        <button type="submit" class="primary">
          {t.save}
        </button>
        <button type="button" onClick={() => setRenaming(undefined)}>
          {t.cancel}
        </button>
      </form>
    );
  }
  return (
    <div class="toolbar">
      <h1>{title}</h1>
      {conversation && (
        <div class="tools">
          <button type="button" onClick={() => setRenaming(conversation.title)}>
            {t.rename}
          </button>
          <button type="button" onClick={() => change({ pinned: !conversation.pinned })}>
            {conversation.pinned ? t.unpin : t.pin}
          </button>
          <button type="button" onClick={remove}>
            {t.deleteConversation}
          </button>
        </div>
      )}
    </div>
  );
}
