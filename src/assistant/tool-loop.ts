import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { executeTool, getErrorMessage, isExecutableTool } from '@ai-sdk/provider-utils';
import type { FinishReason, LanguageModelUsage, ModelMessage, ToolSet } from 'ai';
import {
  addLanguageModelUsage,
  asLanguageModelUsage,
  convertToLanguageModelPrompt,
  createNullLanguageModelUsage,
  parseToolCall,
  prepareRetries,
  prepareToolChoice,
  prepareTools,
  standardizePrompt,
  toResponseMessages,
} from 'ai/internal';
import { cutFinishReason, ModelAnswerCutError } from '../models/finish-reasons.ts';
import { ReasoningTagSplitter } from '../models/reasoning-tag-splitter.ts';
import type { CallSettings } from './chat-events.ts';
import { ToolRefusal, toolFailureText } from './tool-refusal.ts';

/**
 * The agent's tool loop, read straight off the provider's stream: call the model, run the
 * tools it asks for, call it again with their results, until it answers without a tool or
 * `maxSteps` calls were made (the last of which is asked to answer without tools).
 *
 * Why not the SDK's `streamText`: it pipes every token through about fifteen web-stream
 * stages, which cost more CPU per token than the provider's own stream
 * (bench/RESULTS.md, issue 12). This loop keeps everything else of the SDK: its providers
 * and their `doStream` (the language-model specification), its tool definitions, and its own
 * functions for what a loop must get exactly right (prompt conversion, tool-call parsing and
 * validation, retries, the messages a step adds); those come from `ai/internal`, the entry
 * point the SDK's own packages use. It does what Parley's chat used of `streamText` and no
 * more: no approvals, provider-executed tools, files or sources. The recorded provider
 * streams give the same answers, tool messages and history as `streamText` did
 * (test/http/recorded-streams.test.ts).
 *
 * `ai/internal` is not promised stable between releases, so package.json pins `ai` and the
 * `@ai-sdk/*` packages exactly. An upgrade that drops a name used here fails
 * test/assistant/sdk-internals.test.ts, naming it; one that changes what they do fails the
 * recorded-streams test, which is the behaviour check for an upgrade.
 */
/**
 * Tool calls one answer of the model may run at once (models call a few in parallel); the rest
 * are answered with an error the model reads, so a model that loops cannot start hundreds of
 * searches or MCP calls together.
 */
export const TOOL_CALLS_PER_STEP = 10;

export interface ToolLoopOptions {
  model: LanguageModelV4;
  /** The system prompt; called again before every call after the first. */
  instructions: (step: number) => string | Promise<string>;
  messages: ModelMessage[];
  tools: ToolSet;
  maxSteps: number;
  maxRetries: number;
  /** The client leaving or the server stopping. */
  signal: AbortSignal;
  /** Longest wait for a model's first chunk, and then between chunks. */
  chunkTimeoutMs: number;
  /** Longest a tool may run. */
  toolTimeoutMs: number;
  /** The tag in which the model writes its reasoning inside its text, to split it out. */
  reasoningTag?: string | undefined;
  /** Output limit and temperature for every call, when the client set them. */
  callSettings?: CallSettings | undefined;
}

export type ToolLoopPart =
  | { type: 'start-step' }
  | { type: 'text-delta'; text: string }
  | { type: 'reasoning-delta'; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | {
      type: 'tool-result';
      toolCallId: string;
      toolName: string;
      input: unknown;
      output: unknown;
    }
  | {
      type: 'tool-error';
      toolCallId: string;
      toolName: string;
      input: unknown;
      /** What the model is told: a refusal's words, or a generic text (tool-refusal.ts). */
      error: string;
      /** What a tool threw unexpectedly, for the log (codes only) and never for the model. */
      unexpected?: unknown;
    }
  | {
      type: 'finish-step';
      finishReason: FinishReason;
      /** The server's own word for it, e.g. `eos` for an `other`. */
      rawFinishReason: string | undefined;
      usage: LanguageModelUsage;
    }
  | {
      type: 'finish';
      totalUsage: LanguageModelUsage;
      /** What the last model call added to the conversation (as `streamText`'s `onEnd`). */
      responseMessages: ModelMessage[];
    };

/** What a step adds to the conversation, in the shape `toResponseMessages` reads. */
type StepContent = Parameters<typeof toResponseMessages>[0]['content'];
type ToolOutput = Extract<ToolLoopPart, { type: 'tool-result' | 'tool-error' }>;
/** A text or reasoning part of a step, filled by its deltas. */
type OpenPart = { type: 'text' | 'reasoning'; text: string; providerMetadata?: unknown };

/**
 * Runs the loop, yielding what happens as it happens. Failures are thrown: the model's (after
 * its retries), a timeout (a `TimeoutError` DOMException), or the signal's reason.
 */
export async function* runToolLoop(options: ToolLoopOptions): AsyncGenerator<ToolLoopPart> {
  const { model, tools, signal } = options;
  const modelTools = await prepareTools({ tools });
  const toolChoice = prepareToolChoice({ toolChoice: undefined });
  // The last call allowed must answer: a tool it called would run with nobody to read its
  // result, and the answer would end on what the model said before looking ("Let me check.")
  // as if it were whole. The tools stay declared, as the conversation's tool calls need them.
  const lastToolChoice = prepareToolChoice({ toolChoice: 'none' });
  const provider = model.provider.split('.')[0];
  const { retry } = prepareRetries({ maxRetries: options.maxRetries, abortSignal: signal });
  let messages = options.messages;
  let totalUsage = createNullLanguageModelUsage();

  for (let step = 0; ; step++) {
    signal.throwIfAborted();
    yield { type: 'start-step' };
    const instructions = await options.instructions(step);
    const standardized = await standardizePrompt({ instructions, messages });
    const prompt = await convertToLanguageModelPrompt({
      prompt: standardized,
      supportedUrls: await model.supportedUrls,
      download: undefined,
      abortSignal: signal,
      provider,
    });

    const deadline = new ChunkDeadline(options.chunkTimeoutMs);
    const modelSignal = AbortSignal.any([signal, deadline.signal]);
    const content: StepContent = [];
    const running: Promise<ToolOutput>[] = [];
    const settled: ToolOutput[] = [];
    let finish:
      | { reason: FinishReason; raw: string | undefined; usage: LanguageModelUsage }
      | undefined;
    /** Text and reasoning parts still open, by the provider's part id (as the SDK keeps them). */
    const open = { text: new Map<string, OpenPart>(), reasoning: new Map<string, OpenPart>() };
    try {
      const { stream } = await retry(async () => {
        // Each attempt has its own deadline; the wait between attempts is not the model's.
        deadline.start();
        try {
          return await model.doStream({
            prompt,
            tools: modelTools,
            toolChoice: step + 1 >= options.maxSteps ? lastToolChoice : toolChoice,
            abortSignal: modelSignal,
            ...options.callSettings,
          });
        } catch (error) {
          deadline.stop();
          throw error;
        }
      });
      const splitter = options.reasoningTag
        ? new ReasoningTagSplitter(options.reasoningTag)
        : undefined;
      for await (const received of stream as AsyncIterable<LanguageModelV4StreamPart>) {
        deadline.reset();
        for (const part of splitter ? splitter.split(received) : [received]) {
          switch (part.type) {
            case 'text-start':
            case 'reasoning-start': {
              const kind = part.type === 'text-start' ? 'text' : 'reasoning';
              const opened: OpenPart = {
                type: kind,
                text: '',
                providerMetadata: part.providerMetadata,
              };
              open[kind].set(part.id, opened);
              content.push(opened as StepContent[number]);
              break;
            }
            case 'text-delta':
            case 'reasoning-delta': {
              const kind = part.type === 'text-delta' ? 'text' : 'reasoning';
              const opened = open[kind].get(part.id);
              if (!opened) throw new Error(`${kind} part ${part.id} not found`);
              opened.text += part.delta;
              opened.providerMetadata = part.providerMetadata ?? opened.providerMetadata;
              yield { type: part.type, text: part.delta };
              break;
            }
            case 'text-end':
            case 'reasoning-end': {
              const kind = part.type === 'text-end' ? 'text' : 'reasoning';
              const opened = open[kind].get(part.id);
              if (opened)
                opened.providerMetadata = part.providerMetadata ?? opened.providerMetadata;
              open[kind].delete(part.id);
              break;
            }
            case 'tool-call': {
              const call = await parseToolCall({
                toolCall: part,
                tools,
                repairToolCall: undefined,
                instructions: standardized.instructions,
                messages: standardized.messages,
                abortSignal: modelSignal,
              });
              content.push(call);
              yield {
                type: 'tool-call',
                toolCallId: call.toolCallId,
                toolName: call.toolName,
                input: call.input,
              };
              if (!call.invalid && running.length >= TOOL_CALLS_PER_STEP) {
                // Each call is a search, a write or an MCP server's work: a model that asks for
                // hundreds at once is told to take them in turns, and none of them runs.
                const error: ToolOutput = {
                  type: 'tool-error',
                  toolCallId: call.toolCallId,
                  toolName: call.toolName,
                  input: call.input,
                  error: `At most ${TOOL_CALLS_PER_STEP} tool calls run in one step; this one did not run. Call it again in the next step if it is still needed.`,
                };
                content.push({ ...error, dynamic: true } as StepContent[number]);
                yield error;
                break;
              }
              if (call.invalid) {
                // An unknown tool or arguments that fail its schema: the model is told why.
                const error: ToolOutput = {
                  type: 'tool-error',
                  toolCallId: call.toolCallId,
                  toolName: call.toolName,
                  input: call.input,
                  error: getErrorMessage(call.error),
                };
                content.push({ ...error, dynamic: true } as StepContent[number]);
                yield error;
                break;
              }
              // Runs while the model goes on; its result is reported as soon as it is known.
              running.push(
                runTool(call, tools, standardized.messages, signal, options.toolTimeoutMs).then(
                  (output) => {
                    settled.push(output);
                    return output;
                  },
                ),
              );
              break;
            }
            case 'finish': {
              // A server that gave up on the answer (vLLM's `abort`) ends it like a whole one;
              // what came is as partial as if the connection had broken, and fails the same way.
              const cut = cutFinishReason(part.finishReason.raw);
              if (cut) throw new ModelAnswerCutError(cut, asLanguageModelUsage(part.usage));
              finish = {
                reason: part.finishReason.unified,
                raw: part.finishReason.raw,
                usage: asLanguageModelUsage(part.usage),
              };
              break;
            }
            case 'error':
              throw part.error;
            default:
              // stream-start, response-metadata, tool-input-*, raw, files and sources: nothing
              // of Parley's reads them.
              break;
          }
        }
        // Tool results that came in meanwhile (rare: checked without allocating per token).
        if (settled.length > 0) yield* drain(settled, content);
      }
    } catch (error) {
      if (deadline.signal.aborted && !signal.aborted) throw deadline.signal.reason;
      throw error;
    } finally {
      deadline.stop();
    }
    await Promise.allSettled(running);
    yield* drain(settled, content);
    if (!finish) throw new Error('the model stream closed without its end');
    totalUsage = addLanguageModelUsage(totalUsage, finish.usage);
    yield {
      type: 'finish-step',
      finishReason: finish.reason,
      rawFinishReason: finish.raw,
      usage: finish.usage,
    };

    const responseMessages = await toResponseMessages({ content, tools });
    const calledTools = content.some((part) => part.type === 'tool-call');
    if (!calledTools || finish.reason === 'interrupted' || step + 1 >= options.maxSteps) {
      yield { type: 'finish', totalUsage, responseMessages };
      return;
    }
    messages = [...messages, ...responseMessages];
  }
}

/** Reports the tool outputs settled so far, in the order they settled, and adds them to the step. */
function* drain(settled: ToolOutput[], content: StepContent): Generator<ToolOutput> {
  for (const output of settled.splice(0)) {
    content.push(output as StepContent[number]);
    yield output;
  }
}

/**
 * Runs one tool call to its final output; a throw or a timeout becomes a tool error, which the
 * model reads: an unexpected throw is told as a generic text (tool-refusal.ts).
 */
async function runTool(
  call: { toolCallId: string; toolName: string; input: unknown },
  tools: ToolSet,
  messages: ModelMessage[],
  signal: AbortSignal,
  timeoutMs: number,
): Promise<ToolOutput> {
  const { toolCallId, toolName, input } = call;
  const tool = Object.hasOwn(tools, toolName) ? tools[toolName] : undefined;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    if (!tool || !isExecutableTool(tool)) {
      throw new ToolRefusal('tool_unavailable', `The tool ${toolName} cannot be run.`);
    }
    let output: unknown;
    for await (const part of executeTool({
      tool,
      input,
      options: {
        toolCallId,
        messages,
        abortSignal: AbortSignal.any([signal, timeout]),
        context: undefined as never, // Parley's tools take no context
      },
    })) {
      if (part.type === 'final') output = part.output;
    }
    return { type: 'tool-result', toolCallId, toolName, input, output };
  } catch (thrown) {
    const error =
      timeout.aborted && !signal.aborted
        ? new ToolRefusal(
            'tool_timeout',
            `The tool timed out: it took longer than ${timeoutMs} ms and was stopped.`,
          )
        : thrown;
    const { text, unexpected } = toolFailureText(error);
    return {
      type: 'tool-error',
      toolCallId,
      toolName,
      input,
      error: text,
      ...(unexpected ? { unexpected: error } : {}),
    };
  }
}

/**
 * Aborts when no chunk came for `ms`: from the start of a model call (its response headers
 * included) for the first one, then since the last. One timer per call, moved forward per
 * chunk (`refresh` costs less than a new timer).
 */
class ChunkDeadline {
  readonly #controller = new AbortController();
  readonly #ms: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  start(): void {
    this.stop();
    this.#timer = setTimeout(() => {
      this.#controller.abort(new DOMException('The model call timed out', 'TimeoutError'));
    }, this.#ms);
  }

  reset(): void {
    this.#timer?.refresh();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
