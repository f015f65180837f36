export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/**
 * The image type from its first bytes (magic numbers), or undefined when the content is not
 * one of the formats vision models read. The declared `data:` type is not trusted.
 */
export function detectImageType(bytes: Uint8Array): ImageMediaType | undefined {
  const starts = (offset: number, ...values: number[]) =>
    values.every((value, i) => bytes[offset + i] === value);
  if (starts(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (
    starts(0, 0x47, 0x49, 0x46, 0x38) &&
    (bytes[4] === 0x37 || bytes[4] === 0x39) &&
    bytes[5] === 0x61
  )
    return 'image/gif';
  if (starts(0, 0x52, 0x49, 0x46, 0x46) && starts(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp';
  return undefined;
}
