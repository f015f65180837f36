import { createHash, randomBytes } from 'node:crypto';

/** Marks Parley's keys, so secret scanners and people can tell them from other tokens. */
export const KEY_PREFIX = 'pk_';
/** How much of a key is shown in lists to tell keys apart (prefix and 8 characters). */
const SHOWN_CHARS = KEY_PREFIX.length + 8;
const KEY_SHAPE = /^pk_[A-Za-z0-9_-]{43}$/;

export interface NewKey {
  key: string;
  hash: string;
  prefix: string;
}

/** A new key: 256 random bits, base64url, behind `pk_`. */
export function newApiKey(): NewKey {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, hash: hashApiKey(key), prefix: key.slice(0, SHOWN_CHARS) };
}

/**
 * What is stored and looked up. SHA-256 without a salt or a slow hash: the key has 256 bits of
 * entropy, so nothing can be guessed backwards from its hash, and a lookup by hash is an index
 * read that takes the same time whatever the key is.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Whether a bearer credential has the shape of a Parley key (cheap, before any lookup). */
export const looksLikeApiKey = (credential: string) => KEY_SHAPE.test(credential);
