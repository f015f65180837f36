import { detectImageType, type ImageMediaType } from './image-type.ts';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL_PREFIX = /^data:image\/[\w.+-]+;base64,/;

export type DecodedImage =
  | { bytes: Buffer; mediaType: ImageMediaType; problem?: undefined }
  | { problem: string };

/**
 * Decodes an image a client sent as text: plain base64 or a `data:image/…;base64,` URL. Every
 * way it can be wrong is a `problem` naming what to fix; the type is read from the first
 * bytes, never from the declared one. Shared by the doors that take images (`/chat`'s
 * `image_base64`, the OpenAI-compatible `image_url` part).
 */
export function decodeImage(value: string, maxBytes: number): DecodedImage {
  const base64 = value.replace(DATA_URL_PREFIX, '').replace(/\s+/g, '');
  if (base64.length === 0 || base64.length % 4 !== 0 || !BASE64.test(base64)) {
    return { problem: 'must be base64-encoded (plain, or a data:image/...;base64, URL)' };
  }
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length > maxBytes) return { problem: `must encode at most ${maxBytes} bytes` };
  const mediaType = detectImageType(bytes);
  if (!mediaType) return { problem: 'must be a PNG, JPEG, GIF or WebP image' };
  return { bytes, mediaType };
}

/** Characters a base64 image of at most `maxBytes` can take, with room for a data: prefix. */
export const imageMaxChars = (maxBytes: number) => Math.ceil(maxBytes / 3) * 4 + 256;
