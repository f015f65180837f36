import type { Variant } from './bad-input-variants.ts';
import { multipartBody } from './multipart.ts';

/** Uploads a hostile client sends: broken forms, names and fields, and files past the limit. */
export function badUploadVariants(
  variant: (what: string, change: Partial<Variant>) => Variant,
): Variant[] {
  const form = (what: string, parts: Parameters<typeof multipartBody>[0], cut = 0) => {
    const { body, contentType } = multipartBody(parts);
    return variant(what, {
      headers: { 'content-type': contentType },
      body: new Uint8Array(cut ? body.subarray(0, body.length - cut) : body),
    });
  };
  const file = { name: 'file', filename: 'walk.txt', data: 'Some words to index.' };
  return [
    form('multipart without a file', [{ name: 'source', value: 'walk' }]),
    form('multipart without its closing boundary', [file], 10),
    form('multipart file name with NUL', [{ ...file, filename: 'a\u0000b.txt' }]),
    form('multipart file name of 5,000 characters', [
      { ...file, filename: `${'a'.repeat(5000)}.txt` },
    ]),
    form('multipart file name traversal', [{ ...file, filename: '../../etc/passwd' }]),
    form('multipart source with NUL', [{ name: 'source', value: 'a\u0000b' }, file]),
    form('multipart user_id of garbage', [{ name: 'user_id', value: '\u0000' }, file]),
    form('multipart field of 20,000 bytes', [{ name: 'source', value: 'a'.repeat(20_000) }, file]),
    form('multipart with 30 fields', [
      ...Array.from({ length: 30 }, (_, i) => ({ name: `f${i}`, value: 'x' })),
      file,
    ]),
    form('multipart with two files', [file, { ...file, filename: 'two.txt' }]),
    form('multipart file over the limit', [{ ...file, data: 'a '.repeat(100_000) }]),
    form('multipart empty file', [{ ...file, data: '' }]),
    form('multipart binary garbage file', [
      {
        ...file,
        filename: 'walk.pdf',
        type: 'application/pdf',
        data: new Uint8Array(4096).fill(0xff),
      },
    ]),
  ];
}
