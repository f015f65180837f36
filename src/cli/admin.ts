import { resolve } from 'node:path';
import type { fetch } from 'undici';
import { writeBackup } from './write-backup.ts';

// undici, the settings (zod) and tar are imported by the commands that use them: together
// they were most of each command's start-up (a restore needs neither undici nor settings).
/** Connection errors that mean nothing listens at the address (or the name is unknown). */
const NOT_LISTENING = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);
const causeCode = (error: unknown): string | undefined => {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
};

/**
 * `npm run admin -- <command>`: what an operator does by hand, through the running Parley's
 * admin routes with API_TOKEN (from the environment or .env, as `npm start` reads them). So
 * it works on both engines and with replicas, and never opens the embedded engine's data
 * directory beside the process that owns it; `restore` alone works offline, into a new one.
 */
const USAGE = `Usage: npm run admin -- <command> [--url URL] [--json]

  users                                  list users, their limits and keys
  create-user <user_id>                  create a user and print their key (shown once)
  create-key <user_id> [days]            give a user another key (expiring after [days])
  revoke-key <key_id>                    revoke a key
  set-limits <user_id> <name>=<n|default> ...
                                         override limits (chats_per_minute, tokens_per_day,
                                         ingest_mb_per_day, storage_mb; 0 = no limit)
  delete-user <user_id> --yes            delete a user and everything of theirs
  failed-jobs                            background jobs given up for good
  backup <file.tar.gz>                   a live backup of the embedded database
  restore <file.tar.gz> <new-data-dir>   restore a backup into a new data directory

Parley must be running (npm start) for every command but restore; --url names it when it
is not at http://127.0.0.1:$PORT.`;

class UsageError extends Error {}

/**
 * The most words each command takes after its name (set-limits: any number of pairs), and
 * its options beyond --url and --json. A word more is refused, not ignored: `delete-user a b
 * --yes` deleted a and said so, and the operator believed b gone too.
 */
const WORDS: Record<string, { most: number; what: string; options?: string[] }> = {
  users: { most: 0, what: 'no word' },
  'create-user': { most: 1, what: 'one user id' },
  'create-key': { most: 2, what: 'a user id and, at most, a number of days' },
  'revoke-key': { most: 1, what: 'one key id' },
  'set-limits': { most: Number.POSITIVE_INFINITY, what: 'a user id, then name=value pairs' },
  'delete-user': { most: 1, what: 'one user id', options: ['--yes'] },
  'failed-jobs': { most: 0, what: 'no word' },
  backup: { most: 1, what: 'one file' },
  restore: { most: 2, what: 'a backup file and a new data directory' },
};

function checkWords(command: string, args: readonly string[]): void {
  const rule = WORDS[command];
  if (!rule) return; // an unknown command is refused as such
  const option = args.find((word) => word.startsWith('--') && !rule.options?.includes(word));
  if (option) throw new UsageError(`${command} has no option ${option}`);
  const words = args.filter((word) => !rule.options?.includes(word));
  if (words.length > rule.most) {
    throw new UsageError(
      `${command} takes ${rule.what}; got ${words.length}: ${words.map((w) => JSON.stringify(w)).join(' ')}`,
    );
  }
}

type Json = Record<string, unknown>;

/**
 * A path as the operator typed it: `npm run` starts the command in the project's root, so a
 * relative one is taken from where npm was run (INIT_CWD), not from the root.
 */
const operatorPath = (path: string) => resolve(process.env.INIT_CWD ?? process.cwd(), path);

/** `--url`'s value as a base to append routes to, or a usage error saying what it accepts. */
function baseUrl(value: string | undefined): string {
  const url = URL.canParse(value ?? '') ? new URL(value as string) : undefined;
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash) {
    throw new UsageError(
      `--url takes the address Parley serves at, such as http://127.0.0.1:8000 (got ${value || 'nothing'})`,
    );
  }
  return url.href.replace(/\/+$/, '');
}

async function run(typed: string[]): Promise<void> {
  // `--url=http://…` as well as `--url http://…`: both are how options are written.
  const argv = typed.flatMap((word) =>
    word.startsWith('--url=') ? ['--url', word.slice('--url='.length)] : [word],
  );
  const json = argv.includes('--json');
  const urlAt = argv.indexOf('--url');
  const explicitUrl = urlAt >= 0 ? baseUrl(argv[urlAt + 1]) : undefined;
  const words = argv.filter(
    (word, i) => word !== '--json' && (urlAt < 0 || (i !== urlAt && i !== urlAt + 1)),
  );
  const [command, ...args] = words;
  if (!command || command === 'help' || command === '--help') {
    console.log(USAGE);
    return;
  }
  checkWords(command, args);
  if (command === 'restore') {
    const [archive, dataDir] = args;
    if (!archive || !dataDir)
      throw new UsageError('restore needs a backup file and a new data directory');
    // Unpacking a large database takes a while: a person at a terminal is told what goes on
    // (the line is cleared after); scripts get only the result.
    const terminal = process.stderr.isTTY;
    if (terminal) process.stderr.write(`restore: unpacking ${operatorPath(archive)}…`);
    const { restoreBackup } = await import('./restore-backup.ts');
    const root = await restoreBackup(operatorPath(archive), operatorPath(dataDir)).finally(
      () => terminal && process.stderr.write('\r\x1b[2K'),
    );
    console.log(`Restored into ${root}. Start Parley on it: DATA_DIR=${root} npm start`);
    return;
  }

  const [{ parseConfig, readEnvironment }, undici] = await Promise.all([
    import('../config.ts'),
    import('undici'),
  ]);
  /**
   * No time limit on an answer: the server copies the database's files before a backup's first
   * byte, and sends it as fast as it compresses, both slow for a large embedded database
   * (fetch's own 300 s made the command say that Parley was not answering while it was). A
   * server that is not there still fails at once.
   */
  const patient = new undici.Agent({ headersTimeout: 0, bodyTimeout: 0 });
  const config = parseConfig(readEnvironment());
  if (!explicitUrl && config.PORT === 0) {
    throw new UsageError(
      'PORT=0 lets the system choose the port Parley listens on, so this command cannot know ' +
        'it: name the server with --url http://127.0.0.1:<port> (the port is in its log line ' +
        '"Parley is listening")',
    );
  }
  const host = ['0.0.0.0', '::', ''].includes(config.HOST) ? '127.0.0.1' : config.HOST;
  const base = explicitUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
  const call = async (method: string, path: string, body?: unknown) => {
    let response: Awaited<ReturnType<typeof fetch>>;
    try {
      response = await undici.fetch(`${base}${path}`, {
        method,
        dispatcher: patient,
        headers: {
          ...(config.API_TOKEN ? { authorization: `Bearer ${config.API_TOKEN}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      const code = causeCode(error);
      throw new Error(
        code && !NOT_LISTENING.has(code)
          ? `the connection to Parley at ${base} failed (${code})`
          : `Parley is not answering at ${base}: start it (npm start), or name it with --url`,
      );
    }
    if (!response.ok) {
      const detail = (await response.json().catch(() => ({}))) as { detail?: unknown };
      // Refused for the token: say which token is meant, not only "Unauthorized".
      const hint =
        response.status === 401
          ? `: ${config.API_TOKEN ? 'API_TOKEN is not' : 'set API_TOKEN to'} the token Parley was started with (environment or .env)`
          : '';
      throw new Error(
        `${method} ${path}: ${response.status} ${JSON.stringify(detail.detail ?? detail)}${hint}`,
      );
    }
    return response;
  };
  const callJson = async (method: string, path: string, body?: unknown) =>
    (await (await call(method, path, body)).json()) as Json;
  const show = (value: Json, text: () => string) =>
    console.log(json ? JSON.stringify(value, null, 2) : text());
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new UsageError(`${command} needs ${what}`);
    return value;
  };
  const user = (id: string) => `/admin/users/${encodeURIComponent(id)}`;

  switch (command) {
    case 'users': {
      const listed = await callJson('GET', '/admin/users');
      const users = listed.users as {
        user_id: string;
        limits: Json;
        keys: { key_id: string; prefix: string }[];
      }[];
      show(
        listed,
        () =>
          users
            .map(
              (u) =>
                `${u.user_id}\tkeys: ${u.keys.map((k) => `${k.prefix}… (${k.key_id})`).join(', ') || 'none'}\tlimits: ${JSON.stringify(u.limits)}`,
            )
            .join('\n') || 'No users.',
      );
      return;
    }
    case 'create-user': {
      const created = await callJson('POST', '/admin/users', {
        user_id: need(args[0], 'a user id'),
      });
      show(created, () => `Created ${created.user_id}. Their key (shown once): ${created.key}`);
      return;
    }
    case 'create-key': {
      // `0` is refused, not taken as "no expiry": a key meant to lapse must never live forever.
      if (args[1] !== undefined && !/^[1-9]\d*$/.test(args[1]))
        throw new UsageError('days must be a whole number of at least 1 (leave it out: no expiry)');
      const issued = await callJson(
        'POST',
        `${user(need(args[0], 'a user id'))}/keys`,
        args[1] === undefined ? {} : { expires_in_days: Number(args[1]) },
      );
      show(
        issued,
        () =>
          `New key (shown once): ${issued.key}${issued.expires_at ? `, expires ${issued.expires_at}` : ''}`,
      );
      return;
    }
    case 'revoke-key': {
      const revoked = await callJson(
        'DELETE',
        `/admin/keys/${encodeURIComponent(need(args[0], 'a key id'))}`,
      );
      show(revoked, () => `Revoked ${revoked.revoked}.`);
      return;
    }
    case 'set-limits': {
      // `set-limits chats_per_minute=3` named no user: say so, not "needs name=value".
      if (args[0]?.includes('=')) throw new UsageError('set-limits needs a user id first');
      const { LIMIT_NAMES } = await import('../accounts/limits.ts');
      const limits: Record<string, number | null> = {};
      for (const pair of args.slice(1)) {
        const [name, value] = pair.split('=');
        if (!name || value === undefined) throw new UsageError(`${pair}: write name=value`);
        // A mistyped name came back as the route's 422, a JSON array of zod's words.
        if (!(LIMIT_NAMES as readonly string[]).includes(name)) {
          throw new UsageError(`${pair}: no limit is named ${name} (${LIMIT_NAMES.join(', ')})`);
        }
        // A value that is not a whole number would be sent as JSON null, which means "back to
        // the default": a typo must not silently undo a user's limit.
        if (value !== 'default' && !/^\d+$/.test(value)) {
          throw new UsageError(`${pair}: the value is a whole number, or default`);
        }
        limits[name] = value === 'default' ? null : Number(value);
      }
      if (Object.keys(limits).length === 0) throw new UsageError('set-limits needs name=value');
      const changed = await callJson('PATCH', user(need(args[0], 'a user id')), { limits });
      show(changed, () => `Limits of ${changed.user_id}: ${JSON.stringify(changed.limits)}`);
      return;
    }
    case 'delete-user': {
      const id = need(args[0], 'a user id');
      if (!args.includes('--yes'))
        throw new UsageError(`delete-user deletes everything of ${id}: add --yes`);
      const deleted = await callJson('DELETE', user(id));
      show(deleted, () => `Deleted ${deleted.deleted} and everything of theirs.`);
      return;
    }
    case 'failed-jobs': {
      const failed = await callJson('GET', '/admin/jobs?state=failed&limit=500');
      const jobs = failed.jobs as Json[];
      show(
        failed,
        () =>
          jobs
            .map(
              (j) =>
                `${j.failed_at}\t${j.kind}\t${j.id}\t${j.user_id}\t${j.attempts} tries\t${j.error_kind ?? ''}`,
            )
            .join('\n') || 'No failed jobs.',
      );
      return;
    }
    case 'backup': {
      const file = operatorPath(need(args[0], 'a file to write'));
      await writeBackup(file, () => call('GET', '/admin/backup'));
      console.log(
        `Backup written to ${file}. Restore it with: npm run admin -- restore ${file} <new-data-dir>`,
      );
      return;
    }
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

run(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError)
    process.stderr.write(`parley admin: ${error.message}\n\n${USAGE}\n`);
  // A ConfigError (a setting that does not parse) is an Error too.
  else if (error instanceof Error) process.stderr.write(`parley admin: ${error.message}\n`);
  else process.stderr.write(`parley admin: ${String(error)}\n`);
  process.exit(error instanceof UsageError ? 2 : 1);
});
