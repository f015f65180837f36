import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Users' credentials for MCP servers, encrypted at rest with AES-256-GCM under
 * MCP_CREDENTIALS_KEY (32 bytes, base64 or hex). The server's id and the user's id are the
 * additional authenticated data: a sealed value copied to another user's or server's row
 * does not open there. Stored as `v1.<iv>.<tag>.<ciphertext>` (base64url).
 */
export class CredentialCipher {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the credentials key must be 32 bytes');
    this.#key = key;
  }

  seal(plain: string, serverId: string, userId: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(aad(serverId, userId));
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), sealed].map(encode).join('.');
  }

  /** The plain value; throws when it was sealed for another user, server or key. */
  open(sealed: string, serverId: string, userId: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || body === undefined) {
      throw new Error('not a sealed credential');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(aad(serverId, userId));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([
      decipher.update(Buffer.from(body, 'base64url')),
      decipher.final(),
    ]).toString('utf8');
  }
}

const aad = (serverId: string, userId: string) => Buffer.from(`${serverId}\n${userId}`, 'utf8');
const encode = (part: string | Buffer) =>
  typeof part === 'string' ? part : part.toString('base64url');

/** The key from the setting's text: 64 hex digits or base64 of 32 bytes; else undefined. */
export function parseCredentialsKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text, 'base64');
    if (key.length === 32) return key;
  }
  return undefined;
}
