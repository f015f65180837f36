/** One turn of a conversation on screen: the question, its answer, and what can be done to them. */
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useMemo, useState } from 'preact/hooks';
import { type ApprovalDecision, api, type ToolApproval } from './api.ts';
import type { Version } from './conversations-api.ts';
import { t } from './i18n.ts';
import type { LiveText } from './live-text.ts';
import { LoadFailed } from './load.tsx';
import { answerRenderer, splitThinking } from './markdown.ts';
import { memo } from './memo.ts';
import type { Block } from './streaming-markdown.ts';

/** An image to send, and the object URL that shows it (revoked once nothing shows it). */
export interface Attachment {
  file: File;
  url: string;
}

export type Feedback = { score: number; comment: string | null };

export interface Turn {
  key: string;
  runId?: string | undefined;
  question: string;
  answer: string;
  /**
   * The image sent with the question, shown with it. Its file is kept only while Retry can
   * send it again: while the answer streams, and after it failed.
   */
  image?: { url: string; file?: File | undefined } | undefined;
  /** Set exactly while the answer streams: its text grows here (not in `answer`), see LiveText. */
  live?: LiveText | undefined;
  interrupted: boolean;
  error?: { code: string; message: string } | undefined;
  feedback?: Feedback | null | undefined;
  /** Which of the turn's versions this is, as stored (a turn just sent has none to choose). */
  version?: Version | undefined;
  /** Tool calls of this answer that asked for the user's decision, and what was decided. */
  approvals?: (ToolApproval & { decision: ApprovalDecision | undefined })[] | undefined;
}

interface TurnProps {
  turn: Turn;
  onRetry: (turn: Turn) => void;
  onFeedback: (key: string, feedback: Feedback) => void;
  onEdit: (turn: Turn, question: string) => boolean;
  onRegenerate: (turn: Turn) => void;
  onVersion: (runId: string) => void;
  onDecide: (
    approval: ToolApproval,
    decision: 'approve' | 'deny' | 'always',
  ) => Promise<ApprovalDecision>;
}

/**
 * One question and its answer. Memo: a turn whose object and callbacks are unchanged is not
 * rendered again, so a long conversation costs nothing while a new answer streams or the user
 * types. A streaming answer redraws itself from its LiveText.
 */
export const TurnView = memo(function TurnView(props: TurnProps) {
  const { turn } = props;
  const streaming = turn.live !== undefined;
  const full = useLiveText(turn.live, turn.answer);
  const { thinking, answer } = useMemo(() => splitThinking(full), [full]);
  const [editing, setEditing] = useState<string | undefined>();
  const stored = turn.runId !== undefined && !streaming;
  return (
    <article class="turn" data-run={turn.runId}>
      {editing === undefined ? (
        <div class="bubble user">
          <span class="visually-hidden">{t.you}: </span>
          {turn.image && <img class="thumb" src={turn.image.url} alt={t.attachedImage} />}
          <p>{turn.question}</p>
        </div>
      ) : (
        <form
          class="edit"
          onSubmit={(e) => {
            e.preventDefault();
            if (!editing.trim()) return;
            if (props.onEdit(turn, editing)) setEditing(undefined);
          }}
        >
          <textarea
            aria-label={t.editQuestion}
            value={editing}
            rows={3}
            // biome-ignore lint/a11y/noAutofocus: the field the user just asked for
            autoFocus
            onInput={(e) => setEditing((e.target as HTMLTextAreaElement).value)}
          />
          <div class="actions">
            <button type="submit" class="primary">
              {t.save}
            </button>
            <button type="button" onClick={() => setEditing(undefined)}>
              {t.cancel}
            </button>
          </div>
        </form>
      )}
      {(stored || (turn.version && turn.version.count > 1)) && editing === undefined && (
        <div class="turn-tools">
          {turn.version && turn.version.count > 1 && (
            <Versions version={turn.version} onVersion={props.onVersion} />
          )}
          {stored && (
            <button type="button" onClick={() => setEditing(turn.question)}>
              {t.edit}
            </button>
          )}
        </div>
      )}
      <div class="bubble assistant" aria-busy={streaming ? 'true' : 'false'}>
        <span class="visually-hidden">{t.assistant}: </span>
        {thinking !== undefined && (
          <details class="thinking">
            <summary>{t.reasoning}</summary>
            <p>{thinking}</p>
          </details>
        )}
        {turn.approvals?.map((approval) => (
          <ApprovalCard key={approval.id} approval={approval} onDecide={props.onDecide} />
        ))}
        <AnswerText text={answer} />
        {streaming && !answer && <p class="muted">{t.thinkingNow}</p>}
        {turn.interrupted && <p class="muted">{t.interrupted}</p>}
        {turn.error && (
          <div role="alert" class="error">
            <p>
              {t.errorPrefix}: {turn.error.message}
            </p>
            <button type="button" onClick={() => props.onRetry(turn)}>
              {t.retry}
            </button>
          </div>
        )}
        {turn.runId && !streaming && (
          <Feedback
            runId={turn.runId}
            given={turn.feedback ?? null}
            onGiven={(feedback) => props.onFeedback(turn.key, feedback)}
          >
            <button type="button" onClick={() => props.onRegenerate(turn)}>
              {t.regenerate}
            </button>
          </Feedback>
        )}
      </div>
    </article>
  );
});

/** The text of `live` while there is one (redrawn on each change), else `text`. */
function useLiveText(live: LiveText | undefined, text: string): string {
  const [, redraw] = useState(0);
  // Subscribed before the first animation frame can draw, so no change is missed.
  useLayoutEffect(() => live?.subscribe(() => redraw((n) => n + 1)), [live]);
  return live ? live.text : text;
}

/**
 * The answer as Markdown. The finished blocks are one memo list whose array changes only when
 * a block is added, so a redraw touches only the growing last block.
 */
function AnswerText(props: { text: string }) {
  const renderer = useMemo(answerRenderer, []);
  const drawn = useMemo(() => renderer.draw(props.text), [props.text]);
  return (
    <div class="md">
      <FinishedBlocks blocks={drawn.done} />
      {drawn.tail && <div dangerouslySetInnerHTML={{ __html: drawn.tail }} />}
    </div>
  );
}

/** Finished Markdown blocks: each is put in the page once and never touched again. */
const FinishedBlocks = memo(function FinishedBlocks(props: { blocks: readonly Block[] }) {
  return (
    <>
      {props.blocks.map((block) => (
        <div key={block.key} dangerouslySetInnerHTML={{ __html: block.html }} />
      ))}
    </>
  );
});

/** "Previous version", which of how many, "Next version": each shows that version's path. */
function Versions(props: { version: Version; onVersion: (runId: string) => void }) {
  const { previous, next, index, count } = props.version;
  return (
    <span class="versions">
      <button
        type="button"
        disabled={!previous}
        aria-label={t.previousVersion}
        title={t.previousVersion}
        onClick={() => previous && props.onVersion(previous)}
      >
        ‹
      </button>
      <span class="visually-hidden">{t.versionOf(index, count)}</span>
      <span aria-hidden="true">
        {index} / {count}
      </span>
      <button
        type="button"
        disabled={!next}
        aria-label={t.nextVersion}
        title={t.nextVersion}
        onClick={() => next && props.onVersion(next)}
      >
        ›
      </button>
    </span>
  );
}

function Feedback(props: {
  runId: string;
  given: Feedback | null;
  onGiven: (feedback: Feedback) => void;
  children?: ComponentChildren;
}) {
  const [comment, setComment] = useState('');
  const [open, setOpen] = useState(false);
  const [status, setStatus] = useState<string | undefined>();
  const submit = async (score: number, text?: string) => {
    try {
      await api('/feedback', {
        method: 'POST',
        body: { run_id: props.runId, score, ...(text ? { comment: text } : {}) },
      });
      props.onGiven({ score, comment: text ?? null });
      setOpen(true);
      setStatus(t.thanks);
    } catch (error) {
      setStatus((error as Error).message);
    }
  };
  const score = props.given?.score;
  return (
    <div class="feedback">
      <button
        type="button"
        aria-pressed={score === 1}
        onClick={() => submit(1)}
        aria-label={t.goodAnswer}
        title={t.goodAnswer}
      >
        👍
      </button>
      <button
        type="button"
        aria-pressed={score === 0}
        onClick={() => submit(0)}
        aria-label={t.badAnswer}
        title={t.badAnswer}
      >
        👎
      </button>
      {props.children}
      {open && score !== undefined && (
        <form
          class="comment"
          onSubmit={(e) => {
            e.preventDefault();
            void submit(score, comment);
          }}
        >
          <input
            aria-label={t.comment}
            placeholder={t.comment}
            value={comment}
            // No maxLength: it counts UTF-16 units, so 4000 held only 2000 emoji. The server
            // counts characters (4000 of them) and says when a comment is too long.
            onInput={(e) => setComment((e.target as HTMLInputElement).value)}
          />
          <button type="submit">{t.sendComment}</button>
        </form>
      )}
      {status && (
        <span role="status" class="muted">
          {status}
        </span>
      )}
    </div>
  );
}

/** A tool call waiting for the user: which server and tool, its arguments, and the choices. */
function ApprovalCard(props: {
  approval: ToolApproval & { decision: ApprovalDecision | undefined };
  onDecide: TurnProps['onDecide'];
}) {
  const { approval } = props;
  const [sent, setSent] = useState(false);
  /** What the server answered to the press: the stream of an answer already over never says. */
  const [answered, setAnswered] = useState<ApprovalDecision | undefined>();
  const [failure, setFailure] = useState<{ message: string; retry: () => unknown }>();
  const decide = (decision: 'approve' | 'deny' | 'always') => {
    setSent(true);
    setFailure(undefined);
    props.onDecide(approval, decision).then(setAnswered, (error: Error) => {
      // Not taken: the buttons come back, and "Try again" sends the same decision again.
      setSent(false);
      setFailure({ message: error.message, retry: () => decide(decision) });
    });
  };
  const decided = approval.decision ?? answered;
  const label = t.approvalQuestion(approval.tool, approval.server);
  return (
    <section class="approval" aria-label={label}>
      <p>{label}</p>
      <pre>{JSON.stringify(approval.arguments, null, 2)}</pre>
      {decided === undefined && (
        <LoadFailed
          what={t.approvalNotSent}
          error={failure?.message}
          onRetry={() => failure?.retry()}
        />
      )}
      {decided === undefined ? (
        <div class="approval-actions">
          <button type="button" disabled={sent} onClick={() => decide('approve')}>
            {t.approve}
          </button>
          <button type="button" disabled={sent} onClick={() => decide('deny')}>
            {t.deny}
          </button>
          <button type="button" disabled={sent} onClick={() => decide('always')}>
            {t.alwaysAllow}
          </button>
        </div>
      ) : (
        <p class="muted" role="status">
          {t.approvalDecided[decided]}
        </p>
      )}
    </section>
  );
}
