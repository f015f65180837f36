import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { z } from 'zod';

/**
 * Every setting Parley reads, parsed once at start from the environment (and an optional
 * `.env` file) into a frozen object. Names are the upper-case environment variable names of
 * the spec; each part of the application receives only the values it uses.
 */

const BOOLEAN_WORDS: Record<string, boolean> = {
  true: true,
  false: false,
  '1': true,
  '0': false,
  yes: true,
  no: false,
};

const flag = (fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const value = BOOLEAN_WORDS[raw.trim().toLowerCase()];
      if (value === undefined) {
        ctx.addIssue({ code: 'custom', message: 'accepts true, false, 1, 0, yes or no' });
        return z.NEVER;
      }
      return value;
    });

const emptyAsUndefined = (raw: unknown) =>
  typeof raw === 'string' && raw.trim() === '' ? undefined : raw;

const text = () => z.preprocess(emptyAsUndefined, z.string().optional());
const textOr = (fallback: string) => z.preprocess(emptyAsUndefined, z.string().default(fallback));
const integer = (fallback: number, min: number, max: number) =>
  z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ message: `accepts a whole number from ${min} to ${max}` })
      .int({ message: `accepts a whole number from ${min} to ${max}` })
      .min(min, { message: `accepts a whole number from ${min} to ${max}` })
      .max(max, { message: `accepts a whole number from ${min} to ${max}` })
      .default(fallback),
  );
const url = (protocols: RegExp, hint: string) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((value) => URL.canParse(value) && protocols.test(new URL(value).protocol), {
        message: `accepts ${hint}`,
      })
      .optional(),
  );

const MIB = 1024 * 1024;

export const configSchema = z.object({
  // Server
  HOST: textOr('127.0.0.1'),
  PORT: integer(8000, 0, 65535),
  LOG_LEVEL: z.preprocess(
    emptyAsUndefined,
    z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        message: 'accepts fatal, error, warn, info, debug, trace or silent',
      })
      .default('info'),
  ),
  API_TOKEN: text(),
  SHUTDOWN_GRACE_MS: integer(10_000, 0, 600_000),

  // Storage
  DATA_DIR: textOr('./data'),
  DATABASE_URL: url(/^postgres(ql)?:$/, 'a postgres:// or postgresql:// URL'),
  DB_POOL_MAX: integer(10, 1, 200),
  /** Postgres shared_buffers of the embedded engine: memory it keeps for good. */
  EMBEDDED_DB_SHARED_BUFFERS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^\d+(kB|MB|GB)$/, { message: 'accepts a size such as 16MB, 512kB or 1GB' })
      .default('16MB'),
  ),

  // Limits on client input
  MESSAGE_MAX_CHARS: integer(16_000, 1, 1_000_000),
  INGEST_MAX_BYTES: integer(50 * MIB, 1, 2 * 1024 * MIB),
  IMAGE_MAX_BYTES: integer(10 * MIB, 1, 200 * MIB),

  // Models
  LLM_BASE_URL: url(/^https?:$/, 'an http:// or https:// URL'),
  LLM_API_KEY: text(),
  LLM_MODEL: text(),
  LLM_MODEL_PATH: text(),
  /** CPU threads of the embedded model (default: llama.cpp's choice, the physical cores). */
  LLM_THREADS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(256).optional()),
  /** Abort a model call when the first token, or any next one, takes longer than this. */
  LLM_CHUNK_TIMEOUT_MS: integer(120_000, 1_000, 3_600_000),
  /** Retries of a model call that failed before streaming (HTTP 429/5xx, connection refused). */
  LLM_MAX_RETRIES: integer(1, 0, 10),
  TOOL_TIMEOUT_MS: integer(30_000, 100, 3_600_000),
  /** Model calls in one chat: answer, tool calls and the answers after them. */
  CHAT_MAX_STEPS: integer(8, 1, 50),
  /** Estimated tokens of history sent with each chat; older turns are dropped first. */
  HISTORY_MAX_TOKENS: integer(8_000, 100, 1_000_000),
  SSE_KEEPALIVE_MS: integer(15_000, 100, 600_000),

  // Features (spec §1)
  GRAPH_ENABLED: flag(false),
  CONV_RAG_ENABLED: flag(false),
  CRAG_ENABLED: flag(false),
  VISION_ENABLED: flag(false),
  VISION_MODEL_ID: text(),
  VISION_MAX_TOKENS: integer(512, 1, 32_768),
  QUERY_REWRITE_ENABLED: flag(false),

  // Verbosity and display (spec §1)
  RAG_VERBOSE: flag(false),
  RAG_SHOW_SOURCES: flag(false),
  LANGGRAPH_VERBOSE: flag(false),
  THINK_VERBOSE: flag(false),

  // Tracing
  LANGSMITH_API_KEY: text(),
  LANGSMITH_ENDPOINT: url(/^https?:$/, 'an http:// or https:// URL'),
  LANGSMITH_PROJECT: textOr('parley'),
  /** First delay before feedback that LangSmith refused is sent again; doubles up to 1 h. */
  FEEDBACK_RETRY_MS: integer(5_000, 10, 3_600_000),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Reads `.env` (or the file named by ENV_FILE) under the process environment, which wins. */
export function readEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Record<string, string | undefined> {
  const file = resolve(cwd, env.ENV_FILE ?? '.env');
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {};
  return { ...fromFile, ...env };
}

const SECRET_NAMES = /TOKEN|KEY|DATABASE_URL/;

export function parseConfig(env: Record<string, string | undefined>): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? 'configuration');
      const got = env[name];
      // Secrets are named but never echoed: start-up errors end up in shared logs.
      const shown =
        got === undefined || SECRET_NAMES.test(name) ? '' : ` (got ${JSON.stringify(got)})`;
      return `  ${name}: ${issue.message}${shown}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze(result.data);
}
