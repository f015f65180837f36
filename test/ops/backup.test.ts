import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { amcheck } from '@electric-sql/pglite/contrib/amcheck';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgliteOptions } from '../../src/storage/pglite-options.ts';
import { readChat } from '../support/chat-stream.ts';
import { engineEnv } from '../support/engines.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
const TOKEN = 'backup-admin-token';
const USERS = ['ann', 'ben', 'cai'];

/** `npm run admin -- …` as an operator types it, against the server at `parley`. */
function admin(parley: RunningParley | undefined, ...args: string[]) {
  return run(process.execPath, [join(ROOT, 'src/cli/admin.ts'), ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ENV_FILE: '/dev/null', // an empty file: no settings but these
      API_TOKEN: TOKEN,
      ...(parley ? { PORT: new URL(parley.url).port } : {}),
    },
  });
}

function adminEnv(parley: RunningParley) {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ENV_FILE: '/dev/null',
    API_TOKEN: TOKEN,
    PORT: new URL(parley.url).port,
  };
}

/** The same, left running: to stop it, or the server, while the backup is being written. */
function adminProcess(parley: RunningParley, ...args: string[]) {
  const child = spawn(process.execPath, [join(ROOT, 'src/cli/admin.ts'), ...args], {
    cwd: ROOT,
    env: adminEnv(parley),
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null }>((resolve) =>
    child.once('close', (code) => resolve({ code })),
  );
  return { child, exited, stderr: () => stderr };
}

/**
 * A live backup of the embedded engine, taken with the admin command line while users chat:
 * restored into a new data directory, the database passes its own consistency check, and
 * Parley started on it has every answer acknowledged before the backup began.
 */
describe('a live backup of the embedded engine during a chat load', () => {
  let llm: FakeLlmServer;
  let parley: RunningParley | undefined;
  const dirs: string[] = [];
  const dir = (prefix: string) => {
    const made = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(made);
    return made;
  };

  beforeAll(async () => {
    llm = await startFakeLlmServer();
    llm.respond(reply.text('noted, with thanks', { delayMs: 5 }));
  });
  /**
   * A server whose database carries 64 MB of incompressible bytes among its files, so that a
   * backup is far larger than what the sockets between server and client buffer and lasts long
   * enough to be left or stopped midway. Started once (a start and the ballast took seconds
   * each) for the three tests that kill, leave or stop a backup (in this order: the first
   * restarts it, the last stops it); each also runs alone.
   */
  let ballasted: Promise<RunningParley> | undefined;
  const ballastedServer = () => {
    ballasted ??= (async () => {
      const started = await startParley({
        dataDir: dir('parley-backup-ballast-'),
        env: { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url },
      });
      writeFileSync(join(started.dataDir, 'pg', 'zz-ballast'), randomBytes(64 * 1024 * 1024));
      return started;
    })();
    return ballasted;
  };

  afterAll(async () => {
    await parley?.stop();
    await (await ballasted?.catch(() => undefined))?.stop();
    await llm?.close();
    for (const made of dirs) rmSync(made, { recursive: true, force: true });
  });

  it('restores every acknowledged answer into a database that passes its consistency check', async () => {
    const env = { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0' };
    parley = await startParley({ dataDir: dir('parley-backup-live-'), env });
    const live = parley;
    /** run_id → when its `__done` arrived: the answer was acknowledged then. */
    const acknowledged = new Map<string, { user: string; at: number }>();
    let loading = true;
    const chatLoop = async (user: string) => {
      for (let i = 0; loading; i++) {
        const stream = await readChat(
          await live.fetch('/chat', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ user_id: user, message: `note ${i} from ${user}` }),
          }),
        );
        expect(stream.error).toBeUndefined();
        if (stream.runId) acknowledged.set(stream.runId, { user, at: performance.now() });
      }
    };
    const load = Promise.all(USERS.map(chatLoop));
    await waitUntil(() => acknowledged.size >= 15);

    const archive = join(dir('parley-backup-file-'), 'parley.tar.gz');
    const backupStarted = performance.now();
    const { stdout } = await admin(live, 'backup', archive);
    expect(stdout).toContain(`Backup written to ${archive}`);
    // The database was held only while its files were copied, and the operator is told how long.
    const taken = live.logs.find((line) => line.msg === 'backup taken');
    expect(taken).toMatchObject({ pausedMs: expect.any(Number) });
    // The copy it was sent from is not kept once sent.
    await waitUntil(() => readdirSync(join(live.dataDir, 'backups')).length === 0);
    const afterBackup = acknowledged.size;
    await waitUntil(() => acknowledged.size >= afterBackup + 6); // the load went on meanwhile
    loading = false;
    await load;
    await live.stop();
    parley = undefined;

    const restored = join(dir('parley-backup-restored-'), 'data');
    const restoredOut = await admin(undefined, 'restore', archive, restored);
    expect(restoredOut.stdout).toContain(`Restored into ${restored}`);

    // PostgreSQL's own check of every B-tree index against its table, on the restored files.
    const db = await PGlite.create(join(restored, 'pg'), {
      ...pgliteOptions('16MB'),
      extensions: { ...pgliteOptions('16MB').extensions, amcheck },
    });
    try {
      await db.exec('CREATE EXTENSION IF NOT EXISTS amcheck');
      const checked = await db.query<{ checked: number }>(
        `SELECT count(bt_index_check(c.oid, true))::int AS checked
           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           JOIN pg_am a ON a.oid = c.relam
          WHERE a.amname = 'btree' AND c.relkind = 'i' AND c.relpersistence = 'p' AND i.indisvalid`,
      );
      expect(checked.rows[0]?.checked).toBeGreaterThan(20);
    } finally {
      await db.close();
    }

    parley = await startParley({ dataDir: restored, env });
    const before = [...acknowledged].filter(([, ack]) => ack.at < backupStarted);
    expect(before.length).toBeGreaterThanOrEqual(15);
    const stored = new Set<string>();
    for (const user of USERS) {
      const response = await parley.fetch(`/users/${user}/history?limit=100`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { turns: { run_id: string }[] };
      for (const turn of body.turns) stored.add(turn.run_id);
    }
    expect(before.filter(([runId]) => !stored.has(runId))).toEqual([]);
    // Stopped here: a later test's server takes `parley`, and this one was left running.
    await parley.stop();
    parley = undefined;
  }, 180_000);

  it('removes at the next start a backup that a killed run was still sending', async () => {
    const killed = await ballastedServer();
    ballasted = undefined; // killed here: the tests after go on with its restart
    const { dataDir } = killed;
    const env = { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url };
    const unsent = () => readdirSync(join(dataDir, 'backups'));
    try {
      const sending = await killed.fetch('/admin/backup'); // its body left unread
      expect(sending.status).toBe(200);
      expect(unsent()).toEqual([expect.stringMatching(/^\.backup-/)]);
      await killed.stop('SIGKILL');
      await sending.body?.cancel().catch(() => {});
    } finally {
      await killed.stop('SIGKILL');
    }
    expect(unsent()).toHaveLength(1); // as large as the database, and nothing else removes it

    const restarted = await startParley({ dataDir, env });
    ballasted = Promise.resolve(restarted);
    expect(unsent()).toEqual([]);
    expect(
      restarted.logs.some((line) => line.msg === 'removed backups a previous run left unsent'),
    ).toBe(true);
  });

  it('still restores a backup made before backups were streamed (PGlite dumpDataDir)', async () => {
    const env = { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: '0' };
    const dataDir = dir('parley-backup-old-');
    const old = await startParley({ dataDir, env });
    let runId: string | undefined;
    try {
      const stream = await readChat(
        await old.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ user_id: 'ann', message: 'a note kept in the old format' }),
        }),
      );
      runId = stream.runId;
    } finally {
      await old.stop();
    }
    // Exactly what GET /admin/backup wrote until now: PGlite's own gzipped tar of the data dir.
    const db = await PGlite.create(join(dataDir, 'pg'), pgliteOptions('16MB'));
    const archive = join(dir('parley-backup-old-file-'), 'old.tar.gz');
    try {
      const dump = await db.dumpDataDir('gzip');
      writeFileSync(archive, new Uint8Array(await dump.arrayBuffer()));
    } finally {
      await db.close();
    }

    const restored = join(dir('parley-backup-old-restored-'), 'data');
    const { stdout } = await admin(undefined, 'restore', archive, restored);
    expect(stdout).toContain(`Restored into ${restored}`);
    parley = await startParley({ dataDir: restored, env });
    const response = await parley.fetch('/users/ann/history?limit=10');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { turns: { run_id: string }[] };
    expect(body.turns.map((turn) => turn.run_id)).toContain(runId);
    await parley.stop();
    parley = undefined;
  });

  it('removes the copy it sends from when the client leaves mid-download', async () => {
    // Its ballast makes the archive far larger than what the sockets between server and client
    // buffer: the server is still reading the copy when the client leaves.
    const sending = await ballastedServer();
    const { dataDir } = sending;
    const response = await sending.fetch('/admin/backup');
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(first.value?.length).toBeGreaterThan(0);
    await reader.cancel();
    await sending.waitForLog((line) => line.msg === 'backup not sent whole: the client left');
    await waitUntil(() => readdirSync(join(dataDir, 'backups')).length === 0);
    // Nor does the server go on reading a removed file of it, whose disk space stays taken
    // while it is open (a 1 GB segment of a large database).
    await waitUntil(
      () => openFiles(sending.process.pid as number).every((f) => !f.includes('/backups/')),
      2_000,
    );
    // The next test goes on with this server, and stops it.
  });

  it("leaves nothing under the backup's name when the command is stopped or Parley stops sending", async () => {
    // Its ballast makes the download last long enough to be stopped midway.
    const sending = await ballastedServer();
    const ballast = join(sending.dataDir, 'pg', 'zz-ballast');
    const files = dir('parley-backup-stopped-file-');
    const archive = join(files, 'parley.tar.gz');
    // Under the name, a file that is only the start of an archive passes for a backup until the
    // day it is restored; and the next `backup` refused to replace it.
    const begun = () => readdirSync(files).some((name) => statSync(join(files, name)).size > 0);
    try {
      const stopped = adminProcess(sending, 'backup', archive);
      await waitUntil(begun);
      stopped.child.kill('SIGINT');
      const stoppedExit = await stopped.exited;
      expect(readdirSync(files)).toEqual([]);
      expect(stoppedExit).toMatchObject({ code: 130 });
      expect(stopped.stderr()).toContain(`nothing written to ${archive}`);

      // At a terminal it says what it is doing meanwhile (minutes for a large database); in a
      // script (the runs above) it prints nothing of that. `script` gives it a terminal. This
      // backup is taken whole, so without the ballast (moved aside, not in the database's
      // directory): compressing 64 MB of it took seconds, and the progress is drawn from the
      // first bytes on.
      const aside = join(sending.dataDir, 'zz-ballast-aside');
      renameSync(ballast, aside);
      const taken = await run(
        'script',
        [
          '-qec',
          `${process.execPath} ${join(ROOT, 'src/cli/admin.ts')} backup ${archive}`,
          '/dev/null',
        ],
        { cwd: ROOT, env: adminEnv(sending) },
      );
      expect(taken.stdout).toContain('backup: Parley is copying the database (it goes on serving)');
      expect(taken.stdout).toMatch(/backup: [\d.]+ MB written/);
      expect(taken.stdout).toContain(`Backup written to ${archive}`);
      expect(stopped.stderr()).not.toContain('copying');
      expect(readdirSync(files)).toEqual(['parley.tar.gz']);
      rmSync(archive);
      renameSync(aside, ballast);

      const cut = adminProcess(sending, 'backup', archive);
      await waitUntil(begun);
      await sending.stop('SIGKILL');
      expect(await cut.exited).toMatchObject({ code: 1 });
      expect(readdirSync(files)).toEqual([]);
      expect(cut.stderr()).toContain('the backup was cut off before its end');
    } finally {
      await sending.stop();
    }
  });

  // The embedded engine only: a PostgreSQL server has no backup route (409 above).
  it('says why a backup failed midway and leaves no partial copy or file behind', async () => {
    const dataDir = dir('parley-backup-fails-');
    const failing = await startParley({
      dataDir,
      env: { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url },
    });
    try {
      // A file of the data directory that cannot be read (here: a link to nothing) stops the
      // copy after others were copied already.
      symlinkSync(join(dataDir, 'nowhere'), join(dataDir, 'pg', 'zz-unreadable'));
      const response = await failing.fetch('/admin/backup');
      expect(response.status).toBe(500);
      const { detail } = (await response.json()) as { detail: string };
      expect(detail).toContain('The backup failed');
      expect(detail).toContain('zz-unreadable');
      expect(readdirSync(join(dataDir, 'backups'))).toEqual([]);

      const archive = join(dir('parley-backup-fails-file-'), 'parley.tar.gz');
      const failed = await admin(failing, 'backup', archive).catch(
        (error: { stderr: string; code: number }) => error,
      );
      expect(failed).toMatchObject({ code: 1 });
      expect((failed as { stderr: string }).stderr).toContain('The backup failed');
      expect(existsSync(archive)).toBe(false);
      expect(readdirSync(join(dataDir, 'backups'))).toEqual([]);
      rmSync(join(dataDir, 'pg', 'zz-unreadable'));

      // Where copies are made cannot be written to (here: a file stands in its place).
      rmSync(join(dataDir, 'backups'), { recursive: true });
      writeFileSync(join(dataDir, 'backups'), '');
      const unwritable = await failing.fetch('/admin/backup');
      expect(unwritable.status).toBe(500);
      expect(((await unwritable.json()) as { detail: string }).detail).toContain(
        'The backup failed',
      );
    } finally {
      await failing.stop();
    }
  });

  // The copy a backup is sent from is removed once sent, in a promise nobody awaited: a removal
  // that failed (the disk turned read-only after I/O errors, as ext4 does) was an unhandled
  // rejection, and Node ended Parley. Here the backups folder is a file system of its own,
  // remounted read-only while the backup is sent: mounting needs root (as CI and these
  // machines run); elsewhere this is skipped.
  it.skipIf(process.getuid?.() !== 0)(
    'keeps running when the copy it sent cannot be removed (its disk turned read-only)',
    async () => {
      const dataDir = dir('parley-backup-read-only-');
      const backups = join(dataDir, 'backups');
      mkdirSync(backups);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512m', 'tmpfs', backups]);
      let sending: RunningParley | undefined;
      try {
        sending = await startParley({ dataDir, env: { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url } });
        const response = await sending.fetch('/admin/backup');
        expect(response.status).toBe(200); // the copy is made: the archive is read from it
        execFileSync('mount', ['-o', 'remount,ro', backups]);
        expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
        await sending.waitForLog((line) => line.msg === 'backup sent');
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(sending.process.exitCode, sending.output().slice(-1_500)).toBeNull();
        await sending.waitForLog((line) => line.code === 'backup_copy_not_removed');
        expect((await sending.fetch('/health')).status).toBe(200);
      } finally {
        await sending?.stop();
        execFileSync('umount', ['-l', backups]);
      }
    },
  );

  it('says how to back up a PostgreSQL server instead, with the admin command line too', async () => {
    const storage = await engineEnv('server');
    const server = await startParley({
      env: { API_TOKEN: TOKEN, LLM_BASE_URL: llm.url, ...storage.env },
    });
    try {
      const response = await server.fetch('/admin/backup');
      expect(response.status).toBe(409);
      const said = JSON.stringify(await response.json());
      expect(said).toContain('pg_dump');
      expect(said).toContain('docs/operating.md'); // where "Backups" is (the README has none)
      const archive = join(dir('parley-backup-server-'), 'parley.tar.gz');
      const failed = await admin(server, 'backup', archive).catch(
        (error: { stderr: string; code: number }) => error,
      );
      expect(failed).toMatchObject({ code: 1 });
      expect((failed as { stderr: string }).stderr).toContain('pg_dump');
      // A user's key is refused.
      const created = await server.fetch('/admin/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'dora' }),
      });
      const { key } = (await created.json()) as { key: string };
      expect((await server.fetch('/admin/backup', { token: key })).status).toBe(403);
    } finally {
      await server.stop();
      await storage.cleanup();
    }
  });
});

/** What a process has open, from /proc (a removed file shows as `… (deleted)`). */
function openFiles(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return ''; // closed while listed
    }
  });
}

async function waitUntil(condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
