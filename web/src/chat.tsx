import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import {
  ApiError,
  type ApprovalDecision,
  api,
  chatStream,
  enc,
  followRun,
  type StreamEvent,
  stopRun,
  type ToolApproval,
} from './api.ts';
import { ConversationHeader } from './conversation-header.tsx';
import { type Conversation, readConversation, selectVersion } from './conversations-api.ts';
import { t } from './i18n.ts';
import { LiveText } from './live-text.ts';
import { LoadFailed } from './load.tsx';
import { type Attachment, type Feedback, type Turn, TurnView } from './turn-view.tsx';

const IMAGE_MAX_BYTES = 10 * 1024 * 1024;
/** How often a streaming answer is redrawn. */
const DRAW_MS = 100;

let counter = 0;
const newKey = () => `t${++counter}`;

export function ChatPage(props: {
  user: string;
  conversation: string;
  /** A turn to open the conversation at (a search hit). */
  focus: string | undefined;
  visit: number;
  /**
   * A new conversation is being made to replace this one: its turns are not shown and nothing
   * is sent to it; the draft stays, for the new one.
   */
  starting: boolean;
  /** Told when the list of conversations may have changed (a turn stored, a rename…). */
  onActivity: () => void;
  /** Told as a question is sent here: the conversation is no longer unused, whatever the list says. */
  onAsked: (conversation: string) => void;
  /** Told when this conversation was deleted, before the page goes to the current one. */
  onDeleted: () => void;
}) {
  const [turns, setTurns] = useState<Turn[]>([]);
  const [meta, setMeta] = useState<Conversation | undefined>();
  /** An answer streams while its turn has a LiveText (every way it ends removes it). */
  const busy = turns.some((turn) => turn.live !== undefined);
  const [older, setOlder] = useState<string | null | undefined>(undefined);
  const [draft, setDraft] = useState('');
  const [image, setImage] = useState<Attachment | undefined>();
  const [notice, setNotice] = useState<string | undefined>();
  /**
   * A page of turns that could not be loaded (`before`: the older page it was): said, with
   * "Try again". It used to be only the raw failure, beside an empty conversation.
   */
  const [loadFailure, setLoadFailure] = useState<
    { message: string; before: string | undefined } | undefined
  >();
  const [thinking, setThinking] = useState(localStorage.getItem('parley.thinking') === '1');
  const abort = useRef<AbortController | undefined>(undefined);
  /** The answer streaming now, once its run is named: Stop asks the server to stop it. */
  const liveRun = useRef<{ runId: string; stopping: boolean } | undefined>(undefined);
  const log = useRef<HTMLDivElement>(null);
  const top = useRef<HTMLDivElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const list = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  /** The scroll position the page itself set last: its scroll event is not the reader's. */
  const ownScroll = useRef<number | undefined>(undefined);
  const keepOffset = useRef<number | undefined>(undefined);
  const loadingOlder = useRef(false);
  /** Grows when another conversation (or a fresh copy of this one) is loaded: older answers are dropped. */
  const generation = useRef(0);
  /** A turn to bring into view once it is loaded (older pages are loaded until it is). */
  const pendingFocus = useRef<string | undefined>(undefined);

  // Changes one turn; the others keep their objects, so their (memo) views do not run again.
  const update = useCallback(
    (key: string, change: Partial<Turn>) =>
      setTurns((all) => all.map((turn) => (turn.key === key ? { ...turn, ...change } : turn))),
    [],
  );

  // An image's object URL holds the image in memory until revoked: each is revoked once
  // neither the composer nor a turn shows it (preview removed or replaced, conversation
  // cleared), and all of them when the page goes.
  const shownUrls = useRef(new Set<string>());
  useEffect(() => {
    const shown = new Set(turns.flatMap((turn) => (turn.image ? [turn.image.url] : [])));
    if (image) shown.add(image.url);
    for (const url of shownUrls.current) if (!shown.has(url)) URL.revokeObjectURL(url);
    shownUrls.current = shown;
  }, [turns, image]);
  useEffect(
    () => () => {
      for (const url of shownUrls.current) URL.revokeObjectURL(url);
    },
    [],
  );

  const toBottom = (element: HTMLElement) => {
    element.scrollTop = element.scrollHeight;
    ownScroll.current = element.scrollTop;
  };

  // Keeps the newest words in view while the reader is at the bottom: whenever the
  // conversation's height changes (an answer grows, a turn comes into view and gets its real
  // height in place of content-visibility's placeholder, an image loads), after layout and
  // before paint.
  useEffect(() => {
    const element = log.current;
    if (!element || !list.current) return;
    const observer = new ResizeObserver(() => {
      if (atBottom.current && keepOffset.current === undefined) toBottom(element);
    });
    observer.observe(list.current);
    return () => observer.disconnect();
  }, []);

  /**
   * Loads the turns before `before`, or (without it) the newest page in place of all shown.
   * Answers the stored turns' run ids and the answer being written now, as the server knows it.
   */
  const loadPage = async (
    before: string | undefined,
  ): Promise<{ stored: string[]; running: LiveRun | undefined } | undefined> => {
    if (loadingOlder.current) return undefined;
    loadingOlder.current = true;
    const mine = generation.current;
    setLoadFailure(undefined);
    try {
      const page = await readConversation(props.user, props.conversation, before);
      if (mine !== generation.current) return;
      const loaded: Turn[] = page.turns.reverse().map((turn) => ({
        key: newKey(),
        runId: turn.run_id,
        question: turn.question,
        answer: turn.answer,
        interrupted: turn.interrupted,
        feedback: turn.feedback,
        version: turn.version,
      }));
      if (before && log.current)
        keepOffset.current = log.current.scrollHeight - log.current.scrollTop;
      // A question sent while the page loaded stays, below what was loaded.
      setTurns((all) =>
        before ? [...loaded, ...all] : [...loaded, ...all.filter((turn) => !turn.runId)],
      );
      setOlder(page.next_before);
      setMeta(page.conversation);
      return {
        stored: loaded.flatMap((turn) => (turn.runId ? [turn.runId] : [])),
        running: page.running
          ? { runId: page.running.run_id, question: page.running.question }
          : undefined,
      };
    } catch (error) {
      if (mine === generation.current)
        setLoadFailure({ message: (error as Error).message, before });
      return undefined;
    } finally {
      if (mine === generation.current) loadingOlder.current = false;
    }
  };
  /** Shows the conversation afresh from its newest turn (another version, an edit stored). */
  const reload = () => {
    generation.current++;
    loadingOlder.current = false;
    return loadPage(undefined);
  };

  // The window's title names the conversation (in the browser's tabs and history).
  useEffect(() => {
    if (meta) document.title = `${meta.title || t.untitled} · Parley`;
  }, [meta?.title]);

  /** Shows the conversation from its newest turn, and follows an answer still being written. */
  const open = () =>
    reload().then((page) => {
      // An answer still being written (this page was reloaded, another tab or another device
      // asked it): followed from its start, below the turns stored.
      if (!page) return;
      const remembered = readLiveRun(props.user, props.conversation);
      if (remembered && page.stored.includes(remembered.runId)) {
        forgetLiveRun(props.user, props.conversation);
      }
      const running =
        remembered && !page.stored.includes(remembered.runId) ? remembered : page.running;
      if (running && !page.stored.includes(running.runId)) void followRef.current(running);
    });

  useEffect(() => {
    abort.current?.abort();
    setTurns([]);
    setOlder(undefined);
    setMeta(undefined);
    setNotice(undefined);
    setLoadFailure(undefined);
    atBottom.current = true;
    pendingFocus.current = props.focus;
    void open();
    return () => abort.current?.abort();
  }, [props.user, props.conversation, props.visit]);

  // Scrolling up to the top loads the turns before the oldest one shown.
  useEffect(() => {
    const sentinel = top.current;
    if (!sentinel || !older) return;
    const observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((entry) => entry.isIntersecting)) void loadPage(older);
      },
      { root: log.current },
    );
    observer.observe(sentinel);
    return () => observer.disconnect();
  }, [older]);

  // Older turns put above keep the reader's place: the same distance from the bottom. (Keeping
  // to the newest words is the ResizeObserver's work, above.)
  useLayoutEffect(() => {
    const element = log.current;
    if (!element || keepOffset.current === undefined) return;
    element.scrollTop = element.scrollHeight - keepOffset.current;
    keepOffset.current = undefined;
  }, [turns]);

  // A turn asked for (a search hit, a version chosen) is brought into view once loaded; until
  // then, older pages are loaded. The address then names the conversation alone again.
  useLayoutEffect(() => {
    const runId = pendingFocus.current;
    if (!runId || turns.length === 0) return;
    const element = list.current?.querySelector<HTMLElement>(`[data-run="${runId}"]`);
    if (element) {
      pendingFocus.current = undefined;
      atBottom.current = false;
      element.scrollIntoView({ block: 'start' });
      if (log.current) ownScroll.current = log.current.scrollTop;
      history.replaceState(null, '', `#/c/${props.conversation}`);
    } else if (older) void loadPage(older);
    else pendingFocus.current = undefined;
  }, [turns, older]);

  /**
   * Streams an answer into its turn `key`, drawn at most every DRAW_MS (and in an animation
   * frame), so a fast model costs a few renders a second, not one a token; only this answer's
   * view listens to `live`. A stream that breaks before its end (a network change) is followed
   * again from its last event id. Resolves with how the answer ended: `left` when this page
   * stopped listening (the answer goes on at the server).
   */
  const play = async (
    key: string,
    live: LiveText,
    open: () => AsyncGenerator<StreamEvent>,
    controller: AbortController,
    onRun: (runId: string) => void,
    attached?: Attachment,
  ): Promise<'done' | 'failed' | 'stopped' | 'left'> => {
    let answer = '';
    let runId: string | undefined;
    let lastId = 0;
    let failed = false;
    let ended = false;
    let approvals: NonNullable<Turn['approvals']> = [];
    /** Stopped by Stop, in this tab or another. */
    let stoppedThere = false;
    // An answer that did not fail offers no Retry: its image is only shown from then on.
    const shownOnly = () => (attached && !failed ? { image: { url: attached.url } } : {});
    // A redraw waits for DRAW_MS since the last one, then for the next frame: each has its
    // own id, so the one pending when the answer ends is the one cancelled.
    let timer = 0;
    let frame = 0;
    let drawnAt = 0;
    const draw = () => {
      frame = 0;
      drawnAt = performance.now();
      live.set(answer);
    };
    const schedule = () => {
      if (timer || frame) return;
      const wait = DRAW_MS - (performance.now() - drawnAt);
      if (wait <= 0) frame = requestAnimationFrame(draw);
      else
        timer = window.setTimeout(() => {
          timer = 0;
          frame = requestAnimationFrame(draw);
        }, wait);
    };
    const cancelDraw = () => {
      clearTimeout(timer);
      cancelAnimationFrame(frame);
    };
    const stopping = () => liveRun.current?.runId === runId && liveRun.current?.stopping;
    try {
      let events = open();
      for (let retries = 0; ; retries++) {
        try {
          for await (const event of events) {
            if (event.type === 'text') {
              answer += event.text;
              schedule();
            } else if (event.type === 'id') {
              lastId = event.id;
            } else if (event.type === 'error') {
              failed = true;
              update(key, { error: { code: event.code, message: event.message } });
            } else if (event.type === 'approval') {
              approvals = [...approvals, { ...event.approval, decision: undefined }];
              update(key, { approvals });
            } else if (event.type === 'approval-decided') {
              approvals = approvals.map((item) =>
                item.id === event.id ? { ...item, decision: event.decision } : item,
              );
              update(key, { approvals });
            } else if (event.type === 'start') {
              if (runId) continue; // a stream followed again names the same run
              runId = event.runId;
              liveRun.current = { runId, stopping: false };
              onRun(runId);
            } else {
              runId = event.runId;
              ended = true;
              stoppedThere = event.stopped;
            }
          }
          if (ended || !runId || retries >= 3) break;
        } catch (error) {
          if (controller.signal.aborted || error instanceof ApiError) throw error;
          if (!runId || retries >= 3) throw error;
        }
        // Cut before its end: the server still writes it; follow it from the last event seen.
        await new Promise((resolve) => setTimeout(resolve, 500 * (retries + 1)));
        events = followRun(props.user, runId, lastId, controller.signal);
      }
      cancelDraw();
      if (stoppedThere || stopping()) {
        // Stopped: the server keeps what was written under this run, which can be rated. One
        // stopped before any word may never have started (still waiting for the user's
        // previous chat): nothing to rate then.
        const kept = answer ? runId : undefined;
        update(key, { answer, runId: kept, live: undefined, interrupted: true, ...shownOnly() });
        return 'stopped';
      }
      update(key, { answer, runId, live: undefined, ...shownOnly() });
      return failed ? 'failed' : 'done';
    } catch (error) {
      cancelDraw();
      if (controller.signal.aborted) {
        const kept = answer ? runId : undefined;
        update(key, { answer, runId: kept, live: undefined, interrupted: true, ...shownOnly() });
        return stopping() ? 'stopped' : 'left';
      }
      const message = error instanceof ApiError ? error.message : String(error);
      failed = true;
      const failure = { code: 'request_failed', message };
      update(key, { answer, live: undefined, error: failure });
      return 'failed';
    } finally {
      if (abort.current === controller) abort.current = undefined;
      if (liveRun.current?.runId === runId) liveRun.current = undefined;
    }
  };

  /** Follows an answer still being written that this page did not ask (reload, another tab). */
  const follow = async (running: LiveRun) => {
    if (abort.current) return;
    const key = newKey();
    const live = new LiveText();
    setTurns((all) => [
      ...all,
      { key, question: running.question, answer: '', interrupted: false, live },
    ]);
    atBottom.current = true;
    const controller = new AbortController();
    abort.current = controller;
    const started = generation.current;
    const ended = await play(
      key,
      live,
      () => followRun(props.user, running.runId, 0, controller.signal),
      controller,
      () => {},
    );
    if (ended === 'left' || generation.current !== started) return;
    forgetLiveRun(props.user, props.conversation);
    // Shown as stored (with its rating and versions): the reload puts the stored turn in its
    // place. One gone meanwhile (pruned) is not shown at all.
    if (ended === 'failed') setTurns((all) => all.filter((turn) => turn.key !== key));
    await reload();
    props.onActivity();
  };
  const followRef = useRef(follow);
  followRef.current = follow;

  /** Stop: the server stops the answer wherever it is written; its streams then end. */
  const stop = () => {
    const running = liveRun.current;
    if (!running || running.stopping) return abort.current?.abort();
    running.stopping = true;
    stopRun(props.user, running.runId).catch(() => abort.current?.abort());
  };

  /**
   * Sends a question; `replaces` is the key of a failed turn this one takes the place of;
   * `version` the run_id of a turn this is a new version of (edited, or regenerated), shown in
   * its place (the turns after it belonged to the old version).
   */
  const send = async (
    question: string,
    attached: Attachment | undefined,
    replaces?: string,
    version?: string,
  ) => {
    if (!question.trim() || busy || props.starting) return;
    props.onAsked(props.conversation);
    const key = newKey();
    const live = new LiveText();
    // One change removes the turn retried and adds its successor, which shows the same image
    // URL: it stays in use (see the effect that revokes them). Nothing is removed when busy.
    setTurns((all) => {
      const cut = version ? all.findIndex((turn) => turn.runId === version) : -1;
      return [
        ...(cut >= 0 ? all.slice(0, cut) : all).filter((turn) => turn.key !== replaces),
        { key, question, answer: '', interrupted: false, image: attached, live },
      ];
    });
    setDraft('');
    setImage(undefined);
    atBottom.current = true;
    const controller = new AbortController();
    abort.current = controller;
    const started = generation.current;
    const body: Record<string, unknown> = {
      message: question,
      show_thinking: thinking,
      conversation_id: props.conversation,
      // The answer outlives this page: a reload or another tab follows it, Stop is the server's.
      resumable: true,
      // This page can show a tool call that needs the user's decision (issue 33).
      approvals: 'ask',
    };
    if (version) body.regenerate = version;
    const conversation = props.conversation;
    const ended = await play(
      key,
      live,
      async function* () {
        if (attached) body.image_base64 = await dataUrl(attached.file);
        yield* chatStream(body, controller.signal);
      },
      controller,
      (runId) => rememberLiveRun(props.user, conversation, { runId, question }),
      attached,
    );
    // An answer this page left (another conversation shown) goes on: coming back follows it.
    if (ended !== 'left') forgetLiveRun(props.user, conversation);
    const failed = ended === 'failed';
    const stopped = ended !== 'done' && ended !== 'failed';
    if (generation.current !== started) return; // another conversation is shown now
    // The new version is shown among the others (and with them the turn's version buttons).
    // (A retry is not reloaded: the page alone still has the image it was sent with.)
    if (version && !replaces && !failed && !stopped) await reload();
    // The first question names the conversation.
    else if (!meta?.title) {
      const named = await readConversation(props.user, props.conversation, undefined, 1).catch(
        () => undefined,
      );
      if (named && generation.current === started) setMeta(named.conversation);
    }
    props.onActivity();
  };

  // The views of finished turns are memo: their callbacks must stay the same functions, so
  // they call the latest `send` through a ref.
  const sendRef = useRef(send);
  sendRef.current = send;
  const retry = useCallback((turn: Turn) => {
    const { url, file } = turn.image ?? {};
    // A failed answer the server kept (it has a run_id) is answered again as another version,
    // so the model does not see the question twice.
    void sendRef.current(
      turn.question,
      url && file ? { url, file } : undefined,
      turn.key,
      turn.runId,
    );
  }, []);
  const rated = useCallback((key: string, feedback: Feedback) => update(key, { feedback }), []);
  const userRef = useRef(props.user);
  userRef.current = props.user;
  /**
   * The user's decision on a tool call; resolves with the decision in force (an earlier one,
   * or `expired` when the answer stopped waiting: its stream may be over and never say so).
   * A decision that could not be sent rejects, said in words: it was swallowed, the card
   * showed nothing and the answer waited for a decision that never came.
   */
  const decide = useCallback(async (approval: ToolApproval, decision: string) => {
    try {
      const body = await api<{ decision: ApprovalDecision }>(
        `/users/${enc(userRef.current)}/approvals/${enc(approval.id)}`,
        { method: 'POST', body: { decision } },
      );
      return body.decision;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) throw new Error(t.approvalGone);
      if (!(error instanceof ApiError)) throw new Error(t.serverUnreachable);
      throw error;
    }
  }, []);
  const busyRef = useRef(busy);
  busyRef.current = busy;
  /** False while another answer streams: the edited text stays in its field, not lost. */
  const edit = useCallback((turn: Turn, question: string) => {
    if (busyRef.current) return false;
    void sendRef.current(question, undefined, undefined, turn.runId);
    return true;
  }, []);
  const regenerate = useCallback((turn: Turn) => {
    void sendRef.current(turn.question, undefined, undefined, turn.runId);
  }, []);
  const choose = useRef(async (_runId: string) => {});
  choose.current = async (runId: string) => {
    if (busy) return;
    try {
      await selectVersion(props.user, props.conversation, runId);
      pendingFocus.current = runId;
      await reload();
    } catch (error) {
      setNotice((error as Error).message);
    }
  };
  const showVersion = useCallback((runId: string) => void choose.current(runId), []);

  const attach = (file: File | undefined) => {
    if (!file) return;
    if (!file.type.startsWith('image/')) return setNotice(t.notAnImage);
    if (file.size > IMAGE_MAX_BYTES) return setNotice(t.imageTooLarge);
    setNotice(undefined);
    setImage({ file, url: URL.createObjectURL(file) });
  };

  const onKeyDown = (event: KeyboardEvent) => {
    // An input method still composing (Korean, Japanese, Chinese) owns Enter: it commits the
    // syllable there, and must never send the half-composed text.
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing || event.keyCode === 229) {
      return;
    }
    event.preventDefault();
    void send(draft, image);
  };

  return (
    <section
      class="chat"
      aria-label={t.chat}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        e.preventDefault();
        attach(e.dataTransfer?.files[0]);
      }}
    >
      <ConversationHeader
        user={props.user}
        conversation={props.starting ? undefined : meta}
        onChanged={(changed) => {
          setMeta(changed);
          props.onActivity();
        }}
        onDeleted={() => {
          props.onActivity();
          props.onDeleted();
          location.hash = '#/chat';
        }}
        onFailure={setNotice}
      />
      <div
        class="log"
        ref={log}
        role="log"
        aria-label={t.conversation}
        aria-live="polite"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget as HTMLDivElement;
          // Only the reader's own scrolling says whether to follow. The page's scrolls land at
          // the bottom of a conversation that may have grown again since, and the browser's
          // own moves (scroll anchoring, as a turn above gets its real height in place of
          // content-visibility's placeholder) can go down past that: neither is the reader
          // leaving the bottom. Only a move above where the page put the view can be.
          if (ownScroll.current !== undefined && el.scrollTop >= ownScroll.current) return;
          ownScroll.current = undefined;
          atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {props.starting && <p role="status">{t.startingConversation}</p>}
        <div ref={top} class="older">
          {props.starting ? undefined : older ? (
            <button type="button" class="link" onClick={() => loadPage(older)}>
              {t.loadOlder}
            </button>
          ) : (
            older === null && turns.length > 0 && <span>{t.noOlder}</span>
          )}
        </div>
        <div ref={list}>
          {!props.starting &&
            turns.map((turn) => (
              <TurnView
                key={turn.key}
                turn={turn}
                onRetry={retry}
                onFeedback={rated}
                onEdit={edit}
                onRegenerate={regenerate}
                onVersion={showVersion}
                onDecide={decide}
              />
            ))}
        </div>
      </div>
      {!props.starting && (
        <LoadFailed
          what={t.conversationNotLoaded}
          error={loadFailure?.message}
          onRetry={() => (loadFailure?.before ? loadPage(loadFailure.before) : open())}
        />
      )}
      {notice && (
        <p role="alert" class="error">
          {notice}
        </p>
      )}
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void send(draft, image);
        }}
      >
        {image && (
          <div class="preview">
            <img src={image.url} alt={t.attachedImage} />
            <button type="button" onClick={() => setImage(undefined)}>
              {t.removeImage}
            </button>
          </div>
        )}
        <label class="visually-hidden" for="message">
          {t.message}
        </label>
        <textarea
          id="message"
          rows={2}
          value={draft}
          onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
          onKeyDown={onKeyDown}
          onPaste={(e) => {
            const file = e.clipboardData?.files[0];
            if (file) {
              e.preventDefault();
              attach(file);
            }
          }}
        />
        <div class="actions">
          <input
            ref={fileInput}
            type="file"
            accept="image/png,image/jpeg,image/gif,image/webp"
            hidden
            tabIndex={-1}
            aria-hidden="true"
            onChange={(e) => {
              const input = e.target as HTMLInputElement;
              attach(input.files?.[0]);
              input.value = '';
            }}
          />
          <button type="button" onClick={() => fileInput.current?.click()}>
            {t.attachImage}
          </button>
          <label class="check">
            <input
              type="checkbox"
              checked={thinking}
              onChange={(e) => {
                const on = (e.target as HTMLInputElement).checked;
                setThinking(on);
                localStorage.setItem('parley.thinking', on ? '1' : '0');
              }}
            />
            {t.showThinking}
          </label>
          {busy ? (
            <button type="button" class="primary" onClick={stop}>
              {t.stop}
            </button>
          ) : (
            <button type="submit" class="primary" disabled={props.starting}>
              {t.send}
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

function dataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** An answer being written for a conversation, as this browser's tabs know it. */
interface LiveRun {
  runId: string;
  question: string;
}

const liveRunKey = (user: string, conversation: string) => `parley.live.${user}.${conversation}`;

function rememberLiveRun(user: string, conversation: string, run: LiveRun): void {
  try {
    localStorage.setItem(liveRunKey(user, conversation), JSON.stringify(run));
  } catch {
    // storage full or refused: a reload then shows the answer once it is stored
  }
}

function readLiveRun(user: string, conversation: string): LiveRun | undefined {
  try {
    const run = JSON.parse(
      localStorage.getItem(liveRunKey(user, conversation)) ?? 'null',
    ) as Partial<LiveRun> | null;
    if (typeof run?.runId === 'string' && typeof run.question === 'string') {
      return { runId: run.runId, question: run.question };
    }
  } catch {
    // not ours
  }
  return undefined;
}

function forgetLiveRun(user: string, conversation: string): void {
  localStorage.removeItem(liveRunKey(user, conversation));
}
