import type { DocumentKind } from '../extracted-document.ts';
import { byteOrderMark } from './byte-order-mark.ts';

/** How many leading bytes detection reads. */
export const SNIFF_BYTES = 64 * 1024;

export const CONTENT_TYPES: Record<DocumentKind, string> = {
  pdf: 'application/pdf',
  text: 'text/plain',
  markdown: 'text/markdown',
  html: 'text/html',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

export type Detection = { kind: DocumentKind } | { unsupported: string };

/** Binary formats people upload by mistake, named so the 415 says what was sent. */
const KNOWN_BINARY: [string, number[]][] = [
  ['a PNG image', [0x89, 0x50, 0x4e, 0x47]],
  ['a JPEG image', [0xff, 0xd8, 0xff]],
  ['a GIF image', [0x47, 0x49, 0x46, 0x38]],
  ['a gzip archive', [0x1f, 0x8b]],
  ['an old Word/Excel (OLE) file', [0xd0, 0xcf, 0x11, 0xe0]],
  ['an RTF file', [0x7b, 0x5c, 0x72, 0x74, 0x66]],
  ['an executable', [0x7f, 0x45, 0x4c, 0x46]],
];

/**
 * Decides the kind from the content first: a `.pdf` whose bytes are not a PDF is not parsed as
 * one, and a text file named `.bin` is still text. The name only chooses among text formats
 * (Markdown, HTML) when the content does not say, and names DOCX inside a ZIP.
 */
export function detectType(head: Uint8Array, filename: string): Detection {
  const extension = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase() ?? '';
  if (hasPdfHeader(head)) return { kind: 'pdf' };
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) {
    // A DOCX is a ZIP whose first entries include word/… (the OOXML parts come first).
    if (extension === 'docx' || includesAscii(head, 'word/')) return { kind: 'docx' };
    return { unsupported: 'a ZIP archive that is not a Word (.docx) document' };
  }
  for (const [name, magic] of KNOWN_BINARY) {
    if (startsWith(head, magic)) return { unsupported: name };
  }
  if (!looksLikeText(head)) return { unsupported: 'a binary file of an unknown type' };
  if (['html', 'htm', 'xhtml'].includes(extension) || looksLikeHtml(head)) return { kind: 'html' };
  if (['md', 'markdown', 'mdown', 'mkd'].includes(extension)) return { kind: 'markdown' };
  return { kind: 'text' };
}

/** PDF readers accept the header anywhere in the first KB (some files carry junk before it). */
function hasPdfHeader(head: Uint8Array): boolean {
  return includesAscii(head.subarray(0, 1024), '%PDF-');
}

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((byte, index) => bytes[index] === byte);
}

function includesAscii(bytes: Uint8Array, needle: string): boolean {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(
    needle,
    0,
    'latin1',
  );
}

/**
 * Text, in any encoding we decode: UTF-16 with a BOM, or bytes without NULs and with few
 * control characters (tab, newline, carriage return, form feed and escape are text's own).
 */
export function looksLikeText(head: Uint8Array): boolean {
  const bom = byteOrderMark(head);
  if (bom === 'utf-16le' || bom === 'utf-16be')
    return head.length % 2 === 0 || head.length >= SNIFF_BYTES;
  let control = 0;
  for (const byte of head) {
    if (byte === 0) return false;
    if (
      byte < 0x20 &&
      byte !== 0x09 &&
      byte !== 0x0a &&
      byte !== 0x0d &&
      byte !== 0x0c &&
      byte !== 0x1b
    ) {
      control++;
    }
  }
  return control <= head.length / 100;
}

function looksLikeHtml(head: Uint8Array): boolean {
  const start = new TextDecoder('latin1').decode(head.subarray(0, 1024)).trimStart().toLowerCase();
  return start.startsWith('<!doctype html') || start.startsWith('<html');
}
