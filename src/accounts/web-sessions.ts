import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { StoredWebSession, WebSessionRepository } from '../storage/web-session-repository.ts';
import type { Principal } from './principal.ts';

export interface WebSessionSettings {
  sessions: WebSessionRepository;
  /** API_TOKEN; unset is development mode, where a person signs in by naming a user. */
  adminToken: string | undefined;
  /** Resolves a user's key (AccountService.authenticate). */
  authenticateKey: (key: string) => Promise<Principal | undefined>;
  /** How long a session lasts (it ends sooner with its key's expiry or revocation). */
  lifetimeMs: number;
  now?: () => number;
}

/** What a person signs in with: a credential (the admin token or a key), or in development mode a user name. */
export type SignIn = { credential: string } | { userId: string };

export interface NewSession {
  /** The cookie's value: 256 random bits; only its hash is stored. */
  token: string;
  principal: Principal;
  expiresAt: Date;
}

/**
 * How long a looked-up session is trusted in memory: a sign-out or a revoked key ends the
 * session on this replica at once (sign-out) or within this (revocation on any replica).
 */
const CACHE_MS = 900;
const CACHE_ENTRIES = 10_000;

/**
 * The web client's way in: a credential is exchanged once for a session whose cookie the page
 * scripts never see (src/http/session-cookie.ts). A session stands for the same principal as
 * the credential it came from, so the one authorization rule applies unchanged.
 */
export class WebSessions {
  readonly #settings: WebSessionSettings;
  readonly #cache = new Map<string, { session: StoredWebSession | undefined; at: number }>();
  readonly #isAdminToken: ((credential: string) => boolean) | undefined;
  /**
   * Where an administrator's session is stored: under an HMAC of the cookie keyed by API_TOKEN,
   * so a session made with one token is not found once Parley runs with another (changing the
   * token ends the administrator's web sessions, as revoking a key ends its user's).
   */
  readonly #adminId: ((token: string) => string) | undefined;

  constructor(settings: WebSessionSettings) {
    this.#settings = settings;
    const token = settings.adminToken;
    if (token) {
      const expected = sha256(token);
      this.#isAdminToken = (credential) => timingSafeEqual(sha256(credential), expected);
      this.#adminId = (cookie) => createHmac('sha256', token).update(cookie, 'utf8').digest('hex');
    }
  }

  /** Whether a person signs in by naming a user (no API_TOKEN: development mode). */
  get development(): boolean {
    return !this.#settings.adminToken;
  }

  /** A new session for a valid credential; undefined for anything else (the caller says 401). */
  async signIn(input: SignIn): Promise<NewSession | undefined> {
    const now = this.#now();
    let stored: StoredWebSession;
    const lifetimeEnd = new Date(now + this.#settings.lifetimeMs);
    if ('userId' in input) {
      if (!this.development) return undefined;
      stored = { role: 'user', userId: input.userId, keyId: null, expiresAt: lifetimeEnd };
    } else if (this.#isAdminToken?.(input.credential)) {
      stored = { role: 'admin', userId: null, keyId: null, expiresAt: lifetimeEnd };
    } else {
      const principal = await this.#settings.authenticateKey(input.credential);
      if (principal?.kind !== 'user' || !principal.keyId) return undefined;
      stored = {
        role: 'user',
        userId: principal.userId,
        keyId: principal.keyId,
        expiresAt: lifetimeEnd,
      };
    }
    const token = randomBytes(32).toString('base64url');
    const id = stored.role === 'admin' ? this.#adminId?.(token) : undefined;
    await this.#settings.sessions.create(id ?? cookieHash(token), stored);
    // Now and then, not on every sign-in: expired rows are refused anyway.
    if (Math.random() < 0.05) await this.#settings.sessions.deleteExpired(new Date(now));
    const principal = this.#principalOf(stored);
    if (!principal) return undefined;
    return { token, principal, expiresAt: stored.expiresAt };
  }

  /** The principal a cookie's value stands for; undefined for an unknown, ended or expired session. */
  async authenticate(token: string): Promise<Principal | undefined> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
    const id = cookieHash(token);
    const now = this.#now();
    const cached = this.#cache.get(id);
    let session = cached?.session;
    if (!cached || now - cached.at >= CACHE_MS) {
      const adminId = this.#adminId?.(token);
      const found = await this.#settings.sessions.findAny(this.#ids(token), new Date(now));
      // An administrator's session counts only under the current token's id (and a user's
      // only under its own), whatever else a row under the other id claims.
      session = found.find((row) => (row.role === 'admin' ? row.id === adminId : row.id === id));
      if (this.#cache.size >= CACHE_ENTRIES) this.#cache.clear();
      this.#cache.set(id, { session, at: now });
    }
    if (!session || session.expiresAt.getTime() <= now) return undefined;
    return this.#principalOf(session);
  }

  async signOut(token: string): Promise<void> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return;
    this.#cache.delete(cookieHash(token));
    await this.#settings.sessions.delete(this.#ids(token));
  }

  /** Every id a cookie's session may be stored under. */
  #ids(token: string): string[] {
    const admin = this.#adminId?.(token);
    return admin ? [cookieHash(token), admin] : [cookieHash(token)];
  }

  #principalOf(session: StoredWebSession): Principal | undefined {
    if (session.role === 'admin') return { kind: 'admin', development: this.development };
    if (!session.userId) return undefined;
    // A session made by naming a user (no key) is only good while there is no API_TOKEN.
    if (!session.keyId && !this.development) return undefined;
    return { kind: 'user', userId: session.userId, keyId: session.keyId ?? undefined };
  }

  #now(): number {
    return (this.#settings.now ?? Date.now)();
  }
}

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest();
/** Where a user's session is stored: the cookie's SHA-256, so the database never holds the cookie. */
const cookieHash = (token: string) => sha256(token).toString('hex');
