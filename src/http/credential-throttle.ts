import type { FastifyRequest } from 'fastify';
import { looksLikeApiKey } from '../accounts/api-key.ts';
import { FailureThrottle } from '../accounts/failure-throttle.ts';
import { AppError } from '../errors.ts';
import { throttledAs } from './client-address.ts';

/**
 * Wrong credentials a client address may send in a minute before it must wait, on the API
 * and (counted apart) at the web sign-in.
 */
export const BEARER_FAILURES_PER_MINUTE = 10;

/** What an address that must wait is told, and the log line when it starts to. */
export interface Refusal {
  code: string;
  message: string;
  logged: string;
}

const WRONG_TOKENS: Refusal = {
  code: 'too_many_failed_credentials',
  message: 'Too many wrong credentials from this address. Try again shortly.',
  logged: 'too many wrong bearer credentials: the address must wait',
};

/** The web sign-in's: the same policy, counted apart from the bearer tokens. */
export const FAILED_SIGN_INS: Refusal = {
  code: 'too_many_sign_ins',
  message: 'Too many failed sign-ins from this address. Try again shortly.',
  logged: 'too many failed sign-ins: the address must wait',
};

/**
 * Bearer guessing on the API: a user's key cannot be guessed, but API_TOKEN and METRICS_TOKEN
 * are the operator's choice and may be weak. Past BEARER_FAILURES_PER_MINUTE wrong
 * credentials from one address (request.ip, so TRUST_PROXY decides what that is; an IPv6
 * client counts as its /64, client-address.ts), every
 * request from it that carries one is 429 until the oldest failure is a minute old: checked
 * before the credential, so a guess in that time learns nothing, and a right credential waits
 * too. Requests without a credential are neither counted nor refused; a credential that
 * works is not counted (and does not wipe earlier failures, or one good key would let its
 * holder guess on).
 */
export class CredentialThrottle {
  readonly #throttle: FailureThrottle;
  readonly #refusal: Refusal;

  /**
   * `now`: the service's clock (tests move it to pass the window without waiting);
   * `refusal`: what a waiting address is told (the bearer guesser's by default; the web
   * sign-in has its own, counted apart).
   */
  constructor(now?: () => number, refusal: Refusal = WRONG_TOKENS) {
    this.#throttle = new FailureThrottle({
      maxFailures: BEARER_FAILURES_PER_MINUTE,
      windowMs: 60_000,
      ...(now && { now }),
    });
    this.#refusal = refusal;
  }

  /** Before a credential is looked at: throws the 429 while the request's address waits. */
  check(request: FastifyRequest): void {
    // Before the address is worked out: every request with a token (each of a trusted front
    // server's chats) comes here, and almost always nobody has failed.
    if (this.#throttle.idle) return;
    const wait = this.#throttle.retryAfterSeconds(throttledAs(request.ip));
    if (wait === undefined) return;
    throw new AppError(this.#refusal.code, 429, this.#refusal.message, {
      retryAfterSeconds: wait,
    });
  }

  /**
   * Checks a token of the operator's choosing that a route compares itself (METRICS_TOKEN,
   * the Telegram webhook's secret) under this throttle: true when it matches. Nothing given
   * is neither counted nor refused here; something shaped like a user's key is refused but
   * not counted, as on every other route (keys are never throttled).
   */
  verify(request: FastifyRequest, given: string | undefined, matches: (given: string) => boolean) {
    if (given === undefined) return false;
    const keyShaped = looksLikeApiKey(given.startsWith('Bearer ') ? given.slice(7) : given);
    if (!keyShaped) this.check(request);
    if (matches(given)) return true;
    if (!keyShaped) this.failed(request);
    return false;
  }

  /**
   * A token was refused: counted, and the address logged once it must wait (more than once
   * only when requests already past the check fail at the same moment).
   */
  failed(request: FastifyRequest): void {
    const failures = this.#throttle.failed(throttledAs(request.ip));
    if (failures >= BEARER_FAILURES_PER_MINUTE) {
      // The address and the count only: never the credential.
      request.log.warn(
        { address: throttledAs(request.ip), failures, window_seconds: 60 },
        this.#refusal.logged,
      );
    }
  }
}
