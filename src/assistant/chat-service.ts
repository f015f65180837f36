import { randomUUID } from 'node:crypto';
import { type LanguageModelUsage, type ModelMessage, pruneMessages, type ToolSet } from 'ai';
import {
  addLanguageModelUsage,
  createNullLanguageModelUsage,
  resolveLanguageModel,
} from 'ai/internal';
import type { Logger } from 'pino';
import { questionTitle } from '../conversations/question-title.ts';
import type { ChatModel } from '../models/chat-model.ts';
import { loggableFinishReason, ModelAnswerCutError } from '../models/finish-reasons.ts';
import type { ChatContextRepository } from '../storage/chat-context-repository.ts';
import { isConversationGone } from '../storage/database-errors.ts';
import type { RunOutcome, RunRecord, RunRepository } from '../storage/run-repository.ts';
import {
  type AnswerEnd,
  type ChatEvent,
  type ChatRequest,
  type RequestImage,
  SHUTDOWN,
} from './chat-events.ts';
import { describeChatError } from './describe-chat-error.ts';
import { fitHistory } from './history-window.ts';
import { localDate, resolveTimezone } from './local-time.ts';
import { loggableTools } from './loggable-tools.ts';
import type { RunTrace, RunTracer } from './run-tracer.ts';
import { buildSystemPrompt } from './system-prompt.ts';
import { runToolLoop, type ToolLoopPart } from './tool-loop.ts';
import { type HeldTurn, TurnLostError, type UserChatLock } from './user-chat-lock.ts';

export interface ChatSettings {
  maxSteps: number;
  historyMaxTokens: number;
  maxRetries: number;
  chunkTimeoutMs: number;
  toolTimeoutMs: number;
  /** LANGGRAPH_VERBOSE: log every step of the agent loop. */
  logSteps: boolean;
  /** THINK_VERBOSE: log the model's reasoning. */
  logThinking: boolean;
}

/**
 * Text a tool adds after the model's answer (e.g. the sources it found), as fragments; read
 * once the answer is complete. Empty when the tool has nothing to add.
 */
export type AfterAnswer = () => readonly string[];

/** What a chat's tools and prompt sections are bound to: its user, message and image. */
export interface ChatContext {
  userId: string;
  /** Today's date in the user's timezone, YYYY-MM-DD. */
  today: string;
  message: string;
  image?: RequestImage | undefined;
  /** Lets a tool end the streamed answer with text of its own. */
  afterAnswer: (fragments: AfterAnswer) => void;
  runId: string;
  /** The chat's signal (client gone, shutdown): tools with limits of their own end with it. */
  signal: AbortSignal;
  approvals: 'ask' | 'refuse';
  /** Sends an event to the door while a tool runs (an approval question). */
  emit: (event: ChatEvent) => void;
}

/** The tools one chat may use, bound to its user and to its own image, if any. */
export type ToolsFor = (context: ChatContext) => ToolSet;

/**
 * A part of the system prompt a capability contributes (e.g. the user's knowledge graph).
 * Read again before every model call of the chat, so what a tool just changed is seen.
 */
export type PromptSection = (context: ChatContext) => Promise<string | undefined>;

export interface ChatServiceDependencies {
  model: ChatModel;
  contexts: ChatContextRepository;
  runs: RunRepository;
  /** Whose turn it is: in-process for one process, shared through the database for replicas. */
  lock: UserChatLock;
  tools: ToolsFor;
  /**
   * Tools that must be looked up first (the user's MCP servers), asked for only while an MCP
   * server is enabled (the chat context's `toolServers`); a failure leaves them out.
   */
  moreTools?: (context: ChatContext) => Promise<ToolSet>;
  promptSections?: PromptSection[];
  tracer: RunTracer;
  logger: Logger;
  settings: ChatSettings;
  /** What time it is (the reminders' clock, so tests can move both); default: the system's. */
  clock?: { now(): Date };
  /** DEFAULT_TIMEZONE: for users whose profile names none; default UTC. */
  defaultTimezone?: string;
  /**
   * Called once an answer is stored, before its `__done` is sent (CONV_RAG_ENABLED queues
   * the exchange here, and a conversation's title is asked for). Should be quick; a failure
   * is logged and the chat still succeeds.
   */
  onAnswered?: (turn: AnsweredTurn) => Promise<void>;
  /** Where a stored turn goes: the user's conversations and their trees of turns. */
  conversations: ChatConversations;
}

/** What a chat needs of the user's conversations. */
export interface ChatConversations {
  /** The user's current conversation, made when they have none. */
  current(userId: string): Promise<string>;
  /** Makes the path through a turn the active one (the chat then continues from it). */
  activate(conversationId: string, runId: string): Promise<unknown>;
}

/** A completed exchange, as stored. */
export interface AnsweredTurn {
  runId: string;
  userId: string;
  /** Undefined for a conversation the client keeps (the OpenAI door). */
  conversationId: string | undefined;
  question: string;
  answer: string;
}

/** History rows read per chat before the token budget trims them. */
const HISTORY_ROWS = 200;

/**
 * One user's assistant at work: answers a message with that user's history, tools and
 * profile, streaming events as they come, and records the turn and the run. Each user's
 * chats run one at a time (their assistant is busy until the answer is stored); different
 * users run in parallel. History lives in storage, not in memory, so a restart or another
 * replica sees exactly what was said, and idle users cost no memory.
 */
export class ChatService {
  readonly #deps: ChatServiceDependencies;

  constructor(deps: ChatServiceDependencies) {
    this.#deps = deps;
  }

  async *chat(request: ChatRequest, signal: AbortSignal): AsyncGenerator<ChatEvent> {
    const runId = request.runId ?? randomUUID();
    const { logger } = this.#deps;
    const log = logger.child({ runId, userId: request.userId });

    let turn: HeldTurn;
    try {
      turn = await this.#deps.lock.acquire(request.userId, signal);
    } catch (error) {
      if (signal.aborted) {
        log.info('client left while waiting for the previous chat of this user');
        return;
      }
      // The shared lock's database could not be reached: nothing ran, but the question is
      // kept (as a failed run) like any other failure's, and the client is told why.
      const described = describeChatError(error);
      log.warn({ err: error, code: described.code }, 'chat failed before its turn');
      const run = { id: runId, userId: request.userId, model: this.#deps.model.id };
      // The conversation's leaf as the question is stored (no chat of the user can run now).
      const turn = request.conversationId
        ? {
            conversationId: request.conversationId,
            parentRunId: request.parentRunId,
            title: questionTitle(request.message),
            branches: request.parentRunId !== undefined,
          }
        : undefined;
      await this.#record(
        { ...run, startedAt: new Date(), turn },
        kept(request, [{ role: 'user', content: request.message }]),
        { status: 'failed', toolsUsed: [], errorCode: described.code },
        log,
      );
      yield { type: 'error', ...described };
      yield { type: 'done', runId };
      return;
    }
    try {
      if (request.stillWanted && !(await request.stillWanted())) {
        log.info(
          { code: 'withdrawn' },
          'chat not answered: withdrawn while it waited for its turn',
        );
        return;
      }
      yield* this.#answer(request, runId, turn.ticket, signal, log);
    } finally {
      await turn.release();
    }
  }

  async *#answer(
    request: ChatRequest,
    runId: string,
    ticket: number | undefined,
    signal: AbortSignal,
    log: Logger,
  ): AsyncGenerator<ChatEvent> {
    const { model, contexts, runs, tools, tracer, settings } = this.#deps;
    const userMessage: ModelMessage = { role: 'user', content: request.message };
    const run: RunRecord = {
      id: runId,
      userId: request.userId,
      model: model.id,
      startedAt: new Date(),
      ticket,
    };
    const toolsUsed = new Set<string>();
    /** Events tools send while they run (approval questions), passed on as they come. */
    const sideEvents = new SideEvents();
    let answer = '';
    /**
     * The tokens of every model call that ended, and of one the server cut if it said: a run
     * that does not complete (the client left, the model failed) counts for the user's day too.
     */
    let used = createNullLanguageModelUsage();
    let trace: RunTrace | undefined;

    try {
      trace = tracer.startRun({
        runId,
        userId: request.userId,
        model: model.id,
        input: request.message,
      });
      const { conversation } = request;
      // A client that keeps its own conversation gets it instead of the stored history; else
      // the history is the path the question continues, in the conversation it goes to.
      const conversationId = conversation
        ? undefined
        : (request.conversationId ?? (await this.#deps.conversations.current(request.userId)));
      if (conversationId && request.parentRunId) {
        await this.#deps.conversations.activate(conversationId, request.parentRunId);
      }
      const path = conversationId && { conversationId, parentRunId: request.parentRunId };
      const {
        profile,
        history: stored,
        leafRunId,
        toolServers,
      } = await contexts.load(request.userId, HISTORY_ROWS, path || undefined);
      if (conversationId) {
        run.turn = {
          conversationId,
          parentRunId: request.parentRunId === undefined ? leafRunId : request.parentRunId,
          title: questionTitle(request.message),
          branches: request.parentRunId !== undefined,
        };
      }
      const now = this.#deps.clock?.now() ?? new Date();
      const timezone = resolveTimezone(profile?.timezone ?? this.#deps.defaultTimezone);
      const afterAnswer: AfterAnswer[] = [];
      const context: ChatContext = {
        userId: request.userId,
        today: localDate(now, timezone),
        message: request.message,
        image: request.image,
        afterAnswer: (fragments) => afterAnswer.push(fragments),
        runId,
        signal,
        approvals: request.approvals ?? 'refuse',
        emit: (event) => sideEvents.push(event),
      };
      const toolSet = tools(context);
      if (this.#deps.moreTools && toolServers) {
        try {
          // Parley's own tools keep their names whatever a server calls its tools.
          for (const [name, extra] of Object.entries(await this.#deps.moreTools(context))) {
            if (!Object.hasOwn(toolSet, name)) toolSet[name] = extra;
          }
        } catch (error) {
          log.warn({ err: error }, 'extra tools left out of this chat');
        }
      }
      const system = async () => {
        const sections = await Promise.all(
          (this.#deps.promptSections ?? []).map((section) => section(context)),
        );
        const own = buildSystemPrompt({
          now,
          profile: { ...profile, timezone },
          toolNames: Object.keys(toolSet),
          sections,
        });
        return conversation?.instructions ? `${own}\n\n${conversation.instructions}` : own;
      };
      // The same token budget for a client's conversation as for the stored history.
      const messages = conversation
        ? [
            ...fitHistory(conversation.messages.slice(0, -1), settings.historyMaxTokens),
            ...conversation.messages.slice(-1),
          ]
        : [...fitHistory(stored, settings.historyMaxTokens), userMessage];

      // The first chat may wait minutes for the embedded model to download: not past the
      // client leaving or the server stopping.
      const chosen = await unlessAborted(
        model.getForChat?.() ??
          model.get().then((got) => ({ model: got, reasoningTag: undefined })),
        signal,
      );
      const languageModel = resolveLanguageModel(chosen.model);
      const instructions = await system();
      const loop = runToolLoop({
        model: languageModel,
        // Capabilities' sections are read again before each later model call; without any,
        // the prompt cannot change within a chat and is built once.
        instructions: (stepNumber) =>
          stepNumber === 0 || !this.#deps.promptSections?.length ? instructions : system(),
        messages,
        tools: toolSet,
        maxSteps: settings.maxSteps,
        maxRetries: settings.maxRetries,
        signal,
        chunkTimeoutMs: settings.chunkTimeoutMs,
        toolTimeoutMs: settings.toolTimeoutMs,
        reasoningTag: chosen.reasoningTag,
        callSettings: request.callSettings,
      });
      /** What the loop ended with: the usage of every call, the last call's messages. */
      let end: Extract<ToolLoopPart, { type: 'finish' }> | undefined;

      let thinking = false;
      let finishReason: AnswerEnd['finishReason'] = 'stop';
      let unknownEndLogged = false;
      let step = newStep(0);
      const toolStarts = new Map<string, Date>();
      // Only a door that asks for approvals gets events while a tool runs: the others read
      // the loop as it is, at no cost per token.
      const parts = context.approvals === 'ask' ? sideEvents.merge(loop) : loop;
      for await (const part of parts) {
        switch (part.type) {
          case 'approval':
          case 'approval-decided':
            yield part;
            break;
          case 'start-step':
            step = newStep(step.index + 1);
            break;
          case 'reasoning-delta':
            step.reasoning += part.text;
            if (request.separateReasoning) {
              yield { type: 'reasoning', text: part.text };
              break;
            }
            if (!request.showThinking) break;
            if (!thinking) yield { type: 'text', text: '<think>' };
            thinking = true;
            yield { type: 'text', text: part.text };
            break;
          case 'text-delta': {
            // Models that think in <think> tags start the answer with blank lines; drop them.
            const text = answer === '' ? part.text.trimStart() : part.text;
            if (text === '') break;
            if (thinking) yield { type: 'text', text: '</think>' };
            thinking = false;
            answer += text;
            step.text += text;
            yield { type: 'text', text };
            break;
          }
          case 'tool-call':
            toolsUsed.add(part.toolName);
            toolStarts.set(part.toolCallId, new Date());
            step.toolCalls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
            break;
          case 'tool-result':
          case 'tool-error': {
            const failed = part.type === 'tool-error';
            const error = failed ? part.error : undefined;
            if (failed && part.unexpected !== undefined) {
              // The model was told only that the tool failed; the cause is here, as codes.
              log.warn(
                { tool: part.toolName, code: 'tool_failed', err: part.unexpected },
                'tool failed unexpectedly',
              );
            }
            if (settings.logSteps)
              // `toolError`, not `error`: that field is serialized as an error (codes only),
              // and this verbose line is meant to show the reason.
              log.info({ tool: part.toolName, failed, toolError: error }, 'tool finished');
            trace.toolCall({
              id: part.toolCallId,
              name: part.toolName,
              input: part.input,
              startedAt: toolStarts.get(part.toolCallId) ?? new Date(),
              endedAt: new Date(),
              ...(failed ? { error } : { output: part.output }),
            });
            break;
          }
          case 'finish-step':
            finishReason = part.finishReason;
            used = addLanguageModelUsage(used, part.usage);
            // Taken as a normal end (the cuts among them never get here: tool-loop.ts), but an
            // operator should see what the server says, once per answer.
            if (part.finishReason === 'other' && part.rawFinishReason && !unknownEndLogged) {
              unknownEndLogged = true;
              log.info(
                {
                  code: 'unknown_finish_reason',
                  finishReason: loggableFinishReason(part.rawFinishReason),
                },
                'model ended with a finish reason Parley does not know; taken as a normal end',
              );
            }
            if (settings.logThinking && step.reasoning) {
              log.info({ step: step.index, reasoning: step.reasoning }, 'model reasoning');
            }
            if (settings.logSteps) {
              log.info(
                {
                  step: step.index,
                  finishReason: part.finishReason,
                  tools: step.toolCalls.map((c) => c.name),
                },
                'agent step',
              );
            }
            trace.modelCall({
              ...step,
              endedAt: new Date(),
              inputTokens: part.usage.inputTokens,
              outputTokens: part.usage.outputTokens,
            });
            break;
          case 'finish':
            end = part;
            break;
        }
      }
      if (thinking) yield { type: 'text', text: '</think>' };
      for (const text of afterAnswer.flatMap((fragments) => fragments())) {
        answer += text;
        yield { type: 'text', text };
      }

      signal.throwIfAborted(); // the client left or the server is stopping: handled below
      if (!end) throw new Error('the tool loop ended without its end');
      const usage = end.totalUsage;
      await runs.record(
        run,
        {
          status: 'completed',
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          toolsUsed: [...toolsUsed],
          answer: clientKept(request, answer),
        },
        // Reasoning is shown (when asked) but never stored or sent back to the model.
        kept(request, [
          userMessage,
          ...pruneMessages({ messages: end.responseMessages, reasoning: 'all' }),
        ]),
      );
      trace.end({ status: 'completed', answer });
      await this.#deps
        .onAnswered?.({
          runId,
          userId: request.userId,
          conversationId: run.turn?.conversationId,
          question: request.message,
          answer,
        })
        .catch((error: unknown) => log.warn({ err: error }, 'after-answer work not queued'));
      log.info(
        { ms: Date.now() - run.startedAt.getTime(), ...loggableTools(toolsUsed, toolSet) },
        'chat answered',
      );
      yield {
        type: 'done',
        runId,
        end: {
          finishReason,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          reasoningTokens: usage.outputTokenDetails?.reasoningTokens,
        },
      };
    } catch (error) {
      if (error instanceof ModelAnswerCutError && error.usage) {
        used = addLanguageModelUsage(used, error.usage);
      }
      if (error instanceof TurnLostError) {
        // Another chat of this user went ahead while this process stood still: its messages
        // would interleave the history, so only the run is kept (failed, no messages) for the
        // run id the end event names.
        log.warn({ code: 'turn_lost' }, "chat not stored: this user's turn passed to another chat");
        trace?.end({ status: 'failed', answer, error: 'turn_lost' });
        await this.#record(
          { ...run, ticket: undefined },
          [],
          {
            status: 'failed',
            ...tokensOf(used),
            toolsUsed: [...toolsUsed],
            errorCode: 'turn_lost',
          },
          log,
        );
        yield { type: 'error', code: 'turn_lost', message: TURN_LOST_MESSAGE };
        yield { type: 'done', runId };
        return;
      }
      if (isConversationGone(error)) {
        // Its user was deleted while it was answered: an administrator's ordinary act, not a
        // fault. Nothing is left to store the turn in (another try would fail alike).
        log.info({ code: CONVERSATION_GONE }, CONVERSATION_GONE_MESSAGE);
        trace?.end({ status: 'failed', answer, error: CONVERSATION_GONE });
        yield { type: 'error', ...describeChatError(error) };
        yield { type: 'done', runId };
        return;
      }
      if (signal.aborted) {
        yield* this.#interrupted(
          run,
          kept(request, [userMessage]),
          { answer, clientKept: request.conversation !== undefined, used },
          toolsUsed,
          signal,
          log,
        );
        trace?.end({ status: 'interrupted', answer });
        return;
      }
      const described = describeChatError(error);
      log.warn({ err: error, code: described.code }, 'chat failed');
      trace?.end({ status: 'failed', answer, error: described.code });
      // The question is kept even when no answer came, so nothing the user said is lost.
      await this.#record(
        run,
        kept(request, [userMessage, ...partial(answer)]),
        {
          status: 'failed',
          ...tokensOf(used),
          toolsUsed: [...toolsUsed],
          errorCode: described.code,
          answer: clientKept(request, answer),
        },
        log,
      );
      yield { type: 'error', ...described };
      yield { type: 'done', runId };
    }
  }

  /**
   * The client left, or the server is stopping: what was answered so far is kept, marked as
   * interrupted. A client still listening (shutdown) is told why its answer stopped.
   */
  async *#interrupted(
    run: RunRecord,
    question: ModelMessage[],
    { answer, clientKept, used }: { answer: string; clientKept: boolean; used: LanguageModelUsage },
    toolsUsed: Set<string>,
    signal: AbortSignal,
    log: Logger,
  ): AsyncGenerator<ChatEvent> {
    const shutdown = signal.reason === SHUTDOWN;
    log.info(
      { answeredChars: answer.length },
      shutdown
        ? 'chat stopped by shutdown; answer interrupted'
        : 'client disconnected; answer interrupted',
    );
    await this.#record(
      run,
      question.length > 0 ? [...question, ...partial(answer)] : [],
      {
        status: 'interrupted',
        ...tokensOf(used),
        toolsUsed: [...toolsUsed],
        answer: clientKept ? answer : undefined,
      },
      log,
    );
    if (shutdown) {
      yield {
        type: 'error',
        code: 'shutting_down',
        message: 'The service is restarting; send the message again in a moment.',
      };
      yield { type: 'done', runId: run.id };
    }
  }

  /** Stores a run that did not complete, and what was said; a failure here is only logged. */
  async #record(
    run: RunRecord,
    turn: ModelMessage[],
    outcome: RunOutcome,
    log: Logger,
  ): Promise<void> {
    try {
      await this.#deps.runs.record(run, outcome, turn);
    } catch (error) {
      if (error instanceof TurnLostError) log.warn({ code: 'turn_lost' }, 'chat turn not stored');
      else if (isConversationGone(error))
        log.info({ code: CONVERSATION_GONE }, CONVERSATION_GONE_MESSAGE);
      else log.error({ err: error }, 'could not record the chat turn');
    }
  }
}

const CONVERSATION_GONE = 'conversation_deleted';
const CONVERSATION_GONE_MESSAGE = 'chat not stored: its conversation was deleted meanwhile';

const TURN_LOST_MESSAGE =
  'This answer was not saved: the server stalled and your next message was answered first. Send this message again.';

/** What one model call of the agent loop did, for the trace and the verbose logs. */
const newStep = (index: number) => ({
  index,
  startedAt: new Date(),
  text: '',
  reasoning: '',
  toolCalls: [] as { id: string; name: string; input: unknown }[],
});

/**
 * The messages a turn adds to the stored history: none for a conversation the client keeps
 * itself (it resends it every time; its run is still recorded).
 */
const kept = (request: ChatRequest, turn: ModelMessage[]): ModelMessage[] =>
  request.conversation ? [] : turn;

/** Such a run keeps its answer (whole or partial) on the run itself instead. */
const clientKept = (request: ChatRequest, answer: string): string | undefined =>
  request.conversation ? answer : undefined;

/** A run's token counts as stored: none where the model reported none. */
const tokensOf = ({ inputTokens, outputTokens }: LanguageModelUsage) => ({
  inputTokens,
  outputTokens,
});

const partial = (answer: string): ModelMessage[] =>
  answer ? [{ role: 'assistant', content: answer }] : [];

/**
 * Events that tools send while the loop waits on them (a call waiting for approval blocks the
 * loop), merged into what the chat yields as soon as they are sent.
 */
class SideEvents {
  readonly #queue: ChatEvent[] = [];
  #wake: (() => void) | undefined;
  /** Settles when an event is pushed; made again only after it settled. */
  #woken: Promise<'side'> | undefined;

  push(event: ChatEvent): void {
    this.#queue.push(event);
    this.#wake?.();
  }

  /** The loop's parts and the pushed events, in the order they come (the types do not overlap). */
  async *merge<T>(source: AsyncGenerator<T>): AsyncGenerator<T | ChatEvent> {
    let pending: Promise<IteratorResult<T>> | undefined;
    try {
      for (;;) {
        while (this.#queue.length > 0) yield this.#queue.shift() as ChatEvent;
        pending ??= source.next();
        this.#woken ??= new Promise<'side'>((resolve) => {
          this.#wake = () => {
            this.#woken = undefined;
            this.#wake = undefined;
            resolve('side');
          };
        });
        const first = await Promise.race([pending, this.#woken]);
        if (first === 'side') continue;
        pending = undefined;
        if (first.done) break;
        yield first.value;
      }
      while (this.#queue.length > 0) yield this.#queue.shift() as ChatEvent;
    } finally {
      if (pending) await source.return(undefined);
    }
  }
}

/** Settles as `work` does, or rejects with the signal's reason as soon as it is aborted. */
async function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
