import { createHash, randomBytes } from 'node:crypto';

/** Link codes: 10 random bytes, base64url, about 80 bits: not guessable within their hour. */
export const newLinkCode = () => randomBytes(10).toString('base64url');

/** Only the hash is stored, so a read of the database does not hand out live codes. */
export const hashLinkCode = (code: string) => createHash('sha256').update(code).digest('hex');
