import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
const TOKEN = 'admin-cli-token';

/** `npm run admin -- …` against the running server, with API_TOKEN from the environment. */
function admin(port: string, ...args: string[]) {
  return adminWith({ PORT: port }, ...args);
}

/** The same with more environment: `INIT_CWD` is where `npm run` was typed. */
async function adminWith(env: Record<string, string>, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [join(ROOT, 'src/cli/admin.ts'), ...args],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          ENV_FILE: '/dev/null', // an empty file: no settings but these
          API_TOKEN: TOKEN,
          ...env,
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe.each(ENGINES)('the admin command line on the %s engine', (engine) => {
  let setup: EngineSetup;
  let parley: RunningParley;
  let port: string;
  const asUser = (key: string) => parley.fetch('/documents', { token: key });

  beforeAll(async () => {
    setup = await engineSetup(engine, { API_TOKEN: TOKEN });
    parley = await startParley({ dataDir: setup.dataDir, env: setup.env });
    port = new URL(parley.url).port;
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('creates a user and prints a key that works, lists users, gives and revokes keys', async () => {
    const created = await admin(port, 'create-user', 'erin');
    expect(created.code).toBe(0);
    const key = created.stdout.match(/pk_[\w-]+/)?.[0] as string;
    expect((await asUser(key)).status).toBe(200);

    const listed = await admin(port, 'users', '--json');
    const users = JSON.parse(listed.stdout).users as {
      user_id: string;
      keys: { key_id: string }[];
    }[];
    expect(users.map((user) => user.user_id)).toContain('erin');

    const second = await admin(port, 'create-key', 'erin', '30');
    expect(second.stdout).toMatch(/New key \(shown once\): pk_[\w-]+, expires /);
    const keyId = users.find((user) => user.user_id === 'erin')?.keys[0]?.key_id as string;
    expect((await admin(port, 'revoke-key', keyId)).stdout).toContain(`Revoked ${keyId}.`);
    await expect.poll(async () => (await asUser(key)).status, { timeout: 5_000 }).toBe(401);
  });

  it('refuses what would mislead: a key of 0 days, a --url it cannot use, a token Parley does not know', async () => {
    expect((await admin(port, 'create-user', 'fay')).code).toBe(0);
    const keysOfFay = async () => {
      const listed = JSON.parse((await admin(port, 'users', '--json')).stdout) as {
        users: { user_id: string; keys: unknown[] }[];
      };
      return listed.users.find((u) => u.user_id === 'fay')?.keys.length;
    };
    // 0 days was taken as "no expiry": a key meant to lapse at once lived forever.
    const zero = await admin(port, 'create-key', 'fay', '0');
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('days must be a whole number of at least 1');
    expect(await keysOfFay()).toBe(1);

    // The address as a browser shows it, with its slash, names the same server.
    const slash = await adminWith({}, 'users', '--url', `${parley.url}/`);
    expect(slash).toMatchObject({ code: 0 });
    expect(slash.stdout).toContain('fay\t');
    const joined = await adminWith({}, `--url=${parley.url}`, 'users');
    expect(joined).toMatchObject({ code: 0 });
    expect(joined.stdout).toContain('fay\t');
    for (const bad of [['--url'], ['--url', '127.0.0.1:8000'], ['--url=']]) {
      const refused = await adminWith({ PORT: port }, 'users', ...bad);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('--url takes the address Parley serves at');
    }

    const wrong = await adminWith({ PORT: port, API_TOKEN: 'not-the-token' }, 'users');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('API_TOKEN is not the token Parley was started with');
  });

  it('writes a backup only to a new file, and takes relative paths from where npm was run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-admin-files-'));
    try {
      const existing = join(dir, 'kept.tar.gz');
      writeFileSync(existing, 'an older backup');
      const taken = await admin(port, 'backup', existing);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain(`cannot write the backup to ${existing}: it exists already`);
      expect(readFileSync(existing, 'utf8')).toBe('an older backup');
      const nowhere = await admin(port, 'backup', join(dir, 'none', 'b.tar.gz'));
      expect(nowhere.stderr).toContain('its directory does not exist');
      await parley.settled(200);
      // Refused before the server copied the whole database for nothing.
      expect(parley.logs.filter((line) => line.msg === 'backup taken')).toEqual([]);

      // `npm run` starts in the project's root; `restore b.tar.gz restored` typed in `dir`
      // means dir's files (a minimal archive: the engine's directory with its PG_VERSION).
      mkdirSync(join(dir, 'pg'));
      writeFileSync(join(dir, 'pg', 'PG_VERSION'), '17\n');
      await tar.c({ gzip: true, file: join(dir, 'b.tar.gz'), cwd: dir }, ['pg']);
      const restored = await adminWith({ INIT_CWD: dir }, 'restore', 'b.tar.gz', 'restored');
      expect(restored).toMatchObject({ code: 0 });
      expect(restored.stdout).toContain(`Restored into ${join(dir, 'restored')}`);
      expect(existsSync(join(dir, 'restored', 'pg', 'PG_VERSION'))).toBe(true);
      expect(restored.stderr).toBe(''); // in a script, only the result
      // At a terminal (`script` gives it one) it says what it does while it unpacks.
      const shown = await run(
        'script',
        ['-qec', `${process.execPath} src/cli/admin.ts restore b.tar.gz again`, '/dev/null'],
        { cwd: ROOT, env: { PATH: process.env.PATH, ENV_FILE: '/dev/null', INIT_CWD: dir } },
      );
      expect(shown.stdout).toContain(`restore: unpacking ${join(dir, 'b.tar.gz')}…`);
      expect(shown.stdout).toContain(`Restored into ${join(dir, 'again')}`);
      // A new volume, mounted where the data will live, holds only its lost+found.
      mkdirSync(join(dir, 'volume', 'lost+found'), { recursive: true });
      const volume = await adminWith({ INIT_CWD: dir }, 'restore', 'b.tar.gz', 'volume');
      expect(volume).toMatchObject({ code: 0 });
      expect(existsSync(join(dir, 'volume', 'pg', 'PG_VERSION'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("sets a user's limits and puts one back to the default", async () => {
    const set = await admin(port, 'set-limits', 'erin', 'chats_per_minute=3', 'storage_mb=0');
    expect(set.stdout).toContain('"chats_per_minute":3');
    expect(set.stdout).toContain('"storage_mb":0');
    const back = await admin(port, 'set-limits', 'erin', 'chats_per_minute=default');
    expect(back.stdout).not.toContain('"chats_per_minute":3');
    // A typo is refused, never sent as "back to the default".
    await admin(port, 'set-limits', 'erin', 'storage_mb=7');
    const typo = await admin(port, 'set-limits', 'erin', 'storage_mb=7O');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('storage_mb=7O: the value is a whole number, or default');
    expect((await admin(port, 'users')).stdout).toMatch(/erin\t.*"storage_mb":7[,}]/);
    const misnamed = await admin(port, 'set-limits', 'erin', 'chat_per_minute=3');
    expect(misnamed.code).toBe(2);
    expect(misnamed.stderr).toContain(
      'chat_per_minute=3: no limit is named chat_per_minute (chats_per_minute, tokens_per_day',
    );
    const noUser = await admin(port, 'set-limits', 'storage_mb=9');
    expect(noUser.code).toBe(2);
    expect(noUser.stderr).toContain('set-limits needs a user id first');
  });

  it('lists failed jobs, and deletes a user only when told --yes', async () => {
    expect((await admin(port, 'failed-jobs')).stdout).toContain('No failed jobs.');
    const refused = await admin(port, 'delete-user', 'erin');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('add --yes');
    // A second user named is refused, not ignored: the operator would believe both deleted.
    await admin(port, 'create-user', 'fred');
    const two = await admin(port, 'delete-user', 'erin', 'fred', '--yes');
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('delete-user takes one user id; got 2: "erin" "fred"');
    const mistyped = await admin(port, 'delete-user', 'erin', '--yse');
    expect(mistyped.code).toBe(2);
    expect(mistyped.stderr).toContain('delete-user has no option --yse');
    for (const words of [
      ['users', 'erin'],
      ['create-key', 'erin', '3', 'extra'],
    ]) {
      expect((await admin(port, ...words)).code, words.join(' ')).toBe(2);
    }
    const listed = (await admin(port, 'users')).stdout;
    expect(listed).toMatch(/^erin\t/m);
    expect(listed).toMatch(/^fred\t/m);
    const deleted = await admin(port, 'delete-user', 'erin', '--yes');
    expect(deleted.stdout).toContain('Deleted erin');
    expect((await admin(port, 'users')).stdout).not.toContain('erin');
  });

  it('says what is wrong: an unknown command, a refused request, a server that is not running', async () => {
    const unknown = await admin(port, 'frobnicate');
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.stderr).toContain('unknown command frobnicate');
    expect(unknown.stderr).toContain('Usage: npm run admin');

    const missing = await admin(port, 'delete-user', 'nobody-here', '--yes');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('404');

    // restore works offline and never writes over data, nor from a file that is no backup.
    const dir = mkdtempSync(join(tmpdir(), 'parley-restore-'));
    try {
      const missingFile = await admin(port, 'restore', join(dir, 'none.tar.gz'), join(dir, 'a'));
      expect(missingFile).toMatchObject({ code: 1 });
      expect(missingFile.stderr).toContain('no backup at');
      writeFileSync(join(dir, 'kept.txt'), 'data');
      const archive = join(dir, 'not-a-backup.tar.gz');
      await tar.c({ gzip: true, file: archive, cwd: dir }, ['kept.txt']);
      const notEmpty = await admin(port, 'restore', archive, dir);
      expect(notEmpty.code).toBe(1);
      expect(notEmpty.stderr).toContain('is not empty: restore into a new data directory');
      expect(readFileSync(join(dir, 'kept.txt'), 'utf8')).toBe('data');
      const notBackup = await admin(port, 'restore', archive, join(dir, 'fresh'));
      expect(notBackup.code).toBe(1);
      expect(notBackup.stderr).toContain("is not a backup of Parley's embedded database");
      expect(existsSync(join(dir, 'fresh'))).toBe(false); // nothing half-restored is left
      // A file that is no archive at all, or one cut short (a copy that did not finish), is
      // named so too, not by the tar or zlib code a newcomer cannot act on.
      const notTar = join(dir, 'notes.tar.gz');
      writeFileSync(notTar, 'hello\n');
      const cutShort = join(dir, 'cut.tar.gz');
      writeFileSync(cutShort, readFileSync(archive).subarray(0, 20));
      for (const file of [notTar, cutShort]) {
        const refused = await admin(port, 'restore', file, join(dir, 'fresh'));
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain(`${file} is not a backup of Parley's embedded database`);
        expect(existsSync(join(dir, 'fresh'))).toBe(false);
      }
      // A file that cannot be written whole (a full disk; here `ulimit -f` of 1 MB) was only a
      // warning to tar: "Restored", exit 0, over a database cut short.
      mkdirSync(join(dir, 'big', 'pg'), { recursive: true });
      writeFileSync(join(dir, 'big', 'pg', 'PG_VERSION'), '17\n');
      writeFileSync(join(dir, 'big', 'pg', 'large'), Buffer.alloc(3 * 1024 * 1024, 1));
      const big = join(dir, 'big.tar.gz');
      await tar.c({ gzip: true, file: big, cwd: join(dir, 'big') }, ['pg']);
      const limited = await run(
        'bash',
        [
          '-c',
          'ulimit -f 1024 && exec "$@"',
          'bash',
          process.execPath,
          join(ROOT, 'src/cli/admin.ts'),
          'restore',
          big,
          join(dir, 'fresh'),
        ],
        { cwd: ROOT, env: { PATH: process.env.PATH, ENV_FILE: '/dev/null' } },
      ).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => error,
      );
      expect(existsSync(join(dir, 'fresh'))).toBe(false);
      expect(limited).toMatchObject({ code: 1 });
      expect(limited.stderr).toContain(`cannot restore into ${join(dir, 'fresh')}: the file would`);
      // The two words swapped or mistyped: a directory as the backup, a file as the new data
      // directory. Said so, not as Node's "EISDIR: illegal operation on a directory, read".
      const isDir = await admin(port, 'restore', dir, join(dir, 'fresh'));
      expect(isDir).toMatchObject({ code: 1 });
      expect(isDir.stderr).toContain(`${dir} is a directory: name the backup file in it`);
      const isFile = await admin(port, 'restore', archive, join(dir, 'kept.txt'));
      expect(isFile).toMatchObject({ code: 1 });
      expect(isFile.stderr).toContain(`${join(dir, 'kept.txt')} is a file: restore into a new`);
      expect(readFileSync(join(dir, 'kept.txt'), 'utf8')).toBe('data');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    // A server on a port the system chose: the command cannot guess it, and says how to name it.
    const chosen = await admin('0', 'users');
    expect(chosen.code).toBe(2);
    expect(chosen.stderr).toContain('PORT=0 lets the system choose the port');
    expect(chosen.stderr).toContain('--url');
    expect((await admin('0', 'users', '--url', parley.url)).code).toBe(0);

    const down = await admin('1', 'users');
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('Parley is not answering at http://127.0.0.1:1');
  });
});
