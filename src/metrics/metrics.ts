import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ChatErrorCode } from '../assistant/chat-events.ts';

/**
 * What Parley counts for `GET /metrics` (METRICS_ENABLED), in one registry per process.
 * Services receive the narrow interface they report to (optional: absent, nothing is
 * counted). Every label takes values from a small fixed set (route templates, status codes,
 * error codes, job kinds): never a user id, a message or anything a client typed.
 */

export type JobKind =
  | 'feedback_forward'
  | 'memory_decision'
  | 'conversation_title'
  | 'embedding_batch'
  | 'reminder_notice'
  | 'automation_run';
/** `failed`: an attempt failed and the job will be tried again; `buried`: failed for good. */
export type JobOutcome = 'done' | 'failed' | 'buried';
export type NoticeOutcome = 'sent' | 'failed' | 'retry';

/** The reminder scheduler's ticks. */
export interface SchedulerMetrics {
  reminderTick(outcome: 'ok' | 'failed'): void;
}

/** Background work claimed from the database (src/background/job-runner.ts). */
export interface JobMetrics {
  job(kind: JobKind, outcome: JobOutcome): void;
}

const NOTICE_OUTCOMES: Record<JobOutcome, NoticeOutcome> = {
  done: 'sent',
  failed: 'retry',
  buried: 'failed',
};

/** One chat, from the request to its last event. */
export interface ChatObservation {
  fragment(): void;
  error(code: ChatErrorCode): void;
  end(outcome: 'completed' | 'failed' | 'abandoned'): void;
}

/** What pg-pool says about itself. */
export interface PoolState {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

export class Metrics implements SchedulerMetrics, JobMetrics {
  readonly registry = new Registry();
  readonly #httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly #chatsInFlight: Gauge;
  readonly #chats: Counter<'outcome'>;
  readonly #firstFragment: Histogram;
  readonly #fragments: Counter;
  readonly #tokens: Counter<'kind'>;
  readonly #chatErrors: Counter<'code'>;
  readonly #reminderTicks: Counter<'outcome'>;
  readonly #notices: Counter<'outcome'>;
  readonly #jobs: Counter<'job' | 'outcome'>;
  readonly #mcpCalls: Counter<'server' | 'outcome'>;
  readonly #mcpCallSeconds: Histogram<'outcome'>;
  #pools: PoolState[] = [];

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#httpRequests = new Counter({
      name: 'parley_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
    });
    this.#chatsInFlight = new Gauge({
      name: 'parley_chats_in_flight',
      help: 'Chats being answered now (waiting for the user lock, the model or streaming)',
      registers,
    });
    this.#chats = new Counter({
      name: 'parley_chats_total',
      help: 'Chats finished: completed, failed (an error event) or abandoned (client left, shutdown)',
      labelNames: ['outcome'],
      registers,
    });
    this.#firstFragment = new Histogram({
      name: 'parley_chat_first_fragment_seconds',
      help: 'From the chat request to the first answer fragment sent',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    });
    this.#fragments = new Counter({
      name: 'parley_chat_fragments_total',
      help: 'Answer fragments streamed to clients',
      registers,
    });
    this.#tokens = new Counter({
      name: 'parley_model_tokens_total',
      help: 'Tokens the chat model reported, by kind (input, output)',
      labelNames: ['kind'],
      registers,
    });
    this.#chatErrors = new Counter({
      name: 'parley_chat_errors_total',
      help: 'Chats ended by an error event, by its code (model_* are the model server)',
      labelNames: ['code'],
      registers,
    });
    this.#reminderTicks = new Counter({
      name: 'parley_reminder_ticks_total',
      help: 'Reminder scheduler ticks, by outcome (ok, failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.#notices = new Counter({
      name: 'parley_reminder_notices_total',
      help: 'Reminder notices sent, failed for good, or to be retried',
      labelNames: ['outcome'],
      registers,
    });
    this.#jobs = new Counter({
      name: 'parley_jobs_total',
      help: 'Background job attempts, by kind and outcome (done, failed: to be retried, buried: failed for good)',
      labelNames: ['job', 'outcome'],
      registers,
    });
    // `server` is a name the administrator gave (a handful), never anything a user typed.
    this.#mcpCalls = new Counter({
      name: 'parley_mcp_tool_calls_total',
      help: 'MCP tool calls, by server and outcome (ok, tool_error, timeout, failed, not_approved, over_limit)',
      labelNames: ['server', 'outcome'],
      registers,
    });
    this.#mcpCallSeconds = new Histogram({
      name: 'parley_mcp_tool_call_seconds',
      help: 'How long MCP tool calls took (an approval wait included), by outcome',
      labelNames: ['outcome'],
      buckets: [0.05, 0.25, 1, 5, 30, 120],
      registers,
    });
    const pools = () => this.#pools;
    new Gauge({
      name: 'parley_db_pool_waiting',
      help: 'Queries waiting for a pooled database connection',
      registers,
      collect() {
        this.set(pools().reduce((sum, pool) => sum + pool.waitingCount, 0));
      },
    });
    new Gauge({
      name: 'parley_db_pool_connections',
      help: 'Pooled database connections, by state (idle, busy)',
      labelNames: ['state'],
      registers,
      collect() {
        const total = pools().reduce((sum, pool) => sum + pool.totalCount, 0);
        const idle = pools().reduce((sum, pool) => sum + pool.idleCount, 0);
        this.set({ state: 'idle' }, idle);
        this.set({ state: 'busy' }, total - idle);
      },
    });
  }

  /** `route` is the route's template (`/users/:user_id/graph`), never the URL. */
  httpRequest(route: string, method: string, status: number): void {
    this.#httpRequests.inc({ route, method, status: String(status) });
  }

  chatStarted(): ChatObservation {
    const startedAt = performance.now();
    let first = true;
    let ended = false;
    this.#chatsInFlight.inc();
    return {
      fragment: () => {
        this.#fragments.inc();
        if (!first) return;
        first = false;
        this.#firstFragment.observe((performance.now() - startedAt) / 1000);
      },
      error: (code) => this.#chatErrors.inc({ code }),
      end: (outcome) => {
        if (ended) return;
        ended = true;
        this.#chatsInFlight.dec();
        this.#chats.inc({ outcome });
      },
    };
  }

  tokens(kind: 'input' | 'output', count: number | undefined): void {
    if (count !== undefined && count > 0) this.#tokens.inc({ kind }, count);
  }

  reminderTick(outcome: 'ok' | 'failed'): void {
    this.#reminderTicks.inc({ outcome });
  }

  job(kind: JobKind, outcome: JobOutcome): void {
    this.#jobs.inc({ job: kind, outcome });
    // Notices keep their own counter too, as it was before they ran on the job runner.
    if (kind === 'reminder_notice') this.#notices.inc({ outcome: NOTICE_OUTCOMES[outcome] });
  }

  mcpCall(server: string, outcome: string, ms: number): void {
    this.#mcpCalls.inc({ server, outcome });
    this.#mcpCallSeconds.observe({ outcome }, ms / 1000);
  }

  watchPool(pool: PoolState): void {
    this.#pools.push(pool);
  }
}
