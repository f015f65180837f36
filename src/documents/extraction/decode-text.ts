import chardet from 'chardet';
import iconv from 'iconv-lite';
import { byteOrderMark } from './byte-order-mark.ts';

/**
 * Turns the bytes of a text file into a string. Order of evidence: a byte-order mark (UTF-8,
 * UTF-16), then strict UTF-8 (legacy encodings almost never form valid UTF-8 by chance), then
 * chardet's ranked guesses, the first that decodes every byte winning. Legacy encodings are
 * decoded by iconv-lite, not TextDecoder: Node's ICU `euc-kr` decoder lacks the CP949
 * (Windows-949) extension that Korean Windows text uses (`똠`, `햏`); iconv-lite's has it.
 */
export interface DecodedText {
  text: string;
  /** The encoding used: `utf-8`, `utf-16le`, `utf-16be`, `cp949`, `windows-1252`, … */
  encoding: string;
}

/**
 * chardet's names → iconv-lite's. EUC-KR is read as its superset CP949, ISO-8859-1 as its
 * superset Windows-1252 (what "Latin-1" files written on Windows really are).
 */
const SUPERSETS: Record<string, string> = {
  'EUC-KR': 'cp949',
  'ISO-8859-1': 'windows-1252',
  'ISO-8859-9': 'windows-1254',
};

export function decodeText(bytes: Uint8Array): DecodedText {
  const bom = byteOrderMark(bytes);
  if (bom) return { text: new TextDecoder(bom).decode(bytes), encoding: bom }; // strips the BOM
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), encoding: 'utf-8' };
  } catch {
    // not UTF-8: guess below
  }
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const { name } of chardet.analyse(bytes)) {
    const encoding = SUPERSETS[name] ?? name.toLowerCase();
    if (encoding.startsWith('utf') || !iconv.encodingExists(encoding)) continue;
    const text = iconv.decode(buffer, encoding);
    if (!text.includes('\uFFFD')) return { text, encoding };
  }
  // Windows-1252 maps nearly every byte to a character: the most faithful last resort.
  return { text: iconv.decode(buffer, 'windows-1252'), encoding: 'windows-1252' };
}
