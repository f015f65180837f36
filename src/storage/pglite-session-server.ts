import { createServer, type Server, type Socket } from 'node:net';
import type { PGlite } from '@electric-sql/pglite';

/**
 * Serves PGlite's one Postgres session over the wire protocol on a Unix socket, to one client
 * connection at a time.
 *
 * A PostgreSQL server gives every connection its own session, so what a client leaves behind
 * (prepared statements, `SET`, temporary tables, advisory locks, an open or failed transaction,
 * a half-sent extended query) dies with its connection. PGlite has exactly one session, shared
 * by every connection in turn. `pg-pool` drops a client after any failed statement and opens a
 * new one, which then found the old client's named statements still prepared (42P05) and broke
 * every later chat. So this server hands the session over only after resetting it: connections
 * queue, and each one's session starts as a fresh backend's would.
 *
 * `@electric-sql/pglite-socket` does the framing too, but resets nothing on disconnect (it only
 * rolls back a transaction), refuses a second connection outright while the first is closing,
 * and stops serving every connection for good after one failed call into PGlite.
 */

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const TERMINATE = 0x58; // 'X'
/** A bare Sync: ends any extended-protocol message sequence the last client left half-sent. */
const SYNC = Uint8Array.of(0x53, 0, 0, 0, 4);
/**
 * Message types a frontend may send after start-up (Postgres protocol 3.0). PGlite answers any
 * other with a FATAL error and then spins forever on its one session, so such a message never
 * reaches it: the connection is refused the way Postgres refuses it.
 */
const FRONTEND_TYPES = new Set([...'BCcdDEfFHPpQSX'].map((c) => c.charCodeAt(0)));
/** Longest message accepted before a connection counts as garbage (Postgres' own bound is 1 GB). */
const MAX_MESSAGE_BYTES = 1 << 30;

export interface SessionServerEvents {
  /** PGlite itself failed (not a SQL error, which goes back to the client as usual). */
  onEngineFailure(error: unknown): void;
}

/** PGlite threw: not a SQL error (those go back to the client), the engine itself broke. */
class EngineFailure extends Error {
  constructor(cause: unknown) {
    super('PGlite failed', { cause });
  }
}

export class PgliteSessionServer {
  readonly #db: PGlite;
  readonly #events: SessionServerEvents;
  readonly #server: Server;
  readonly #waiting: Socket[] = [];
  #active: Socket | undefined;
  #failed = false;

  constructor(db: PGlite, events: SessionServerEvents) {
    this.#db = db;
    this.#events = events;
    this.#server = createServer((socket) => this.#enqueue(socket));
  }

  listen(path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(path, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of [...this.#waiting, this.#active]) socket?.destroy();
    this.#waiting.length = 0;
    await closed;
  }

  #enqueue(socket: Socket): void {
    if (this.#failed) {
      socket.destroy();
      return;
    }
    // Errors end up as 'close', which hands the session on; nothing to do on 'error' itself.
    socket.on('error', () => {});
    socket.pause();
    this.#waiting.push(socket);
    socket.once('close', () => {
      const index = this.#waiting.indexOf(socket);
      if (index >= 0) this.#waiting.splice(index, 1);
    });
    if (!this.#active) this.#next();
  }

  #next(): void {
    const socket = this.#waiting.shift();
    if (!socket || this.#failed) return;
    this.#active = socket;
    void this.#serve(socket)
      .catch((error: unknown) => this.#fail(error))
      .then(() => {
        socket.destroy();
        this.#active = undefined;
        this.#next();
      });
  }

  /** Relays one connection's messages until it closes, then resets the session for the next. */
  async #serve(socket: Socket): Promise<void> {
    try {
      await this.#relay(socket);
    } catch (error) {
      // A connection that breaks (reset, premature close) has simply ended; PGlite failing
      // has not, and stops the server.
      if (error instanceof EngineFailure) throw error.cause;
    }
    await this.#resetSession();
  }

  async #relay(socket: Socket): Promise<void> {
    let startup = true;
    for await (const messages of readMessages(socket, () => startup)) {
      // The messages that arrived together (a client sends Parse, Bind, Describe, Execute and
      // Sync of a query in one write) go to PGlite in one call and their answers back in one
      // write: a call and a write per message cost the embedded engine ~20 % more CPU a chat
      // (bench/RESULTS.md, issue 31).
      const batch: Buffer[] = [];
      for (const message of messages) {
        if (startup) {
          const code = message.readInt32BE(4);
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
            socket.write('N'); // no encryption on a private socket; the client goes on in clear
            continue;
          }
          if (code === CANCEL_REQUEST) return; // PGlite runs a statement to its end: nothing to cancel
          startup = false;
          // The start-up packet is answered on its own (PGlite reads it apart from the rest).
          await this.#executeAll([message], socket);
          continue;
        }
        if (message[0] === TERMINATE || !FRONTEND_TYPES.has(message[0] as number)) {
          await this.#executeAll(batch, socket);
          if (message[0] !== TERMINATE) {
            socket.write(protocolViolation(`invalid frontend message type ${message[0]}`));
          }
          return;
        }
        batch.push(message);
      }
      await this.#executeAll(batch, socket);
    }
  }

  /** Runs messages in one call into PGlite; what it answers goes to the client in one writev. */
  async #executeAll(messages: Buffer[], socket: Socket): Promise<void> {
    if (messages.length === 0) return;
    const answers: Buffer[] = [];
    const input = messages.length === 1 ? (messages[0] as Buffer) : Buffer.concat(messages);
    await this.#execute(input, (data) => {
      // `data` is a view of PGlite's WASM memory, valid only during this call: PGlite writes
      // its next output there. A write the socket cannot take at once is queued, so it must
      // own its bytes, or a result larger than the socket's buffer reaches the client
      // corrupted and the client waits forever.
      answers.push(Buffer.from(data));
    });
    if (answers.length === 0 || !socket.writable) return;
    socket.cork();
    for (const answer of answers) socket.write(answer);
    socket.uncork();
  }

  async #execute(message: Uint8Array, onRawData: (data: Uint8Array) => void): Promise<void> {
    try {
      await this.#db.runExclusive(() => this.#db.execProtocolRawStream(message, { onRawData }));
    } catch (error) {
      throw new EngineFailure(error);
    }
  }

  /** Leaves the session as a new backend's: no transaction, statements, settings, locks. */
  async #resetSession(): Promise<void> {
    await this.#execute(SYNC, () => {});
    if (this.#db.isInTransaction()) await this.#db.exec('ROLLBACK');
    await this.#db.exec('DISCARD ALL');
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    for (const socket of this.#waiting) socket.destroy();
    this.#waiting.length = 0;
    this.#events.onEngineFailure(error);
  }
}

/** An ErrorResponse with severity FATAL and SQLSTATE 08P01, as Postgres sends before hanging up. */
function protocolViolation(text: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C08P01\0M${text}\0\0`, 'utf8');
  const header = Buffer.alloc(5);
  header.write('E', 0, 'latin1');
  header.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([header, fields]);
}

/**
 * Splits a connection's bytes into protocol messages: during start-up they have no type byte
 * (length first), afterwards a type byte precedes the length. Yields the complete messages at
 * hand together (start-up ones one by one: what follows depends on how they are answered).
 *
 * A message larger than one read (a multi-megabyte parameter arrives in 64 KB pieces) is
 * joined once, when its last piece is in: joining at every read copied everything received
 * so far again each time, quadratic, which held this thread (and so every query) for seconds
 * while an 8 MB answer was stored.
 */
async function* readMessages(socket: Socket, inStartup: () => boolean): AsyncGenerator<Buffer[]> {
  let buffered: Buffer = Buffer.alloc(0);
  const pieces: Buffer[] = [];
  let piecesBytes = 0;
  /** Bytes `buffered` must hold before it can be split again: the message it begins. */
  let needed = 0;
  socket.resume();
  for await (const chunk of socket) {
    pieces.push(chunk as Buffer);
    piecesBytes += (chunk as Buffer).length;
    if (buffered.length + piecesBytes < needed) continue;
    const alone = buffered.length === 0 && pieces.length === 1;
    buffered = alone ? (pieces.pop() as Buffer) : Buffer.concat([buffered, ...pieces.splice(0)]);
    piecesBytes = 0;
    while (true) {
      needed = 0;
      const startup = inStartup();
      // A start-up message is at least its length and a code; a typed one, its type and length.
      const [headerBytes, minLength] = startup ? [4, 8] : [5, 5];
      const group: Buffer[] = [];
      while (buffered.length >= headerBytes) {
        const length = startup ? buffered.readInt32BE(0) : 1 + buffered.readInt32BE(1);
        if (length < minLength || length > MAX_MESSAGE_BYTES) {
          // Not Postgres: what came before it is served, then the connection is hung up.
          if (group.length > 0) yield group;
          return;
        }
        if (buffered.length < length) {
          needed = length;
          break;
        }
        group.push(buffered.subarray(0, length));
        buffered = buffered.subarray(length);
        if (startup) break;
      }
      if (group.length === 0) break;
      yield group;
    }
  }
}
