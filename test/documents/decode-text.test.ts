import iconv from 'iconv-lite';
import { describe, expect, it } from 'vitest';
import { decodeText } from '../../src/documents/extraction/decode-text.ts';

const KOREAN =
  '서울은 대한민국의 수도이며, 한강이 도시를 가로질러 흐른다. 오늘 서울의 날씨는 맑고 따뜻하다.';
/** `똠` and `햏` exist in CP949 (Windows-949) only, not in EUC-KR proper. */
const CP949_ONLY = '똠방각하와 햏자는 완성형 밖의 글자다. 서울에서 만난 친구가 웃었다.';
const FRENCH = 'Le garçon a commandé un café crème et une brûlée — « déjà vu », dit-il à l’hôtel.';

describe('decodeText', () => {
  it('reads UTF-8, with or without a BOM', () => {
    expect(decodeText(new TextEncoder().encode(KOREAN))).toEqual({
      text: KOREAN,
      encoding: 'utf-8',
    });
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(FRENCH)]);
    expect(decodeText(new Uint8Array(bom))).toEqual({ text: FRENCH, encoding: 'utf-8' });
  });

  it('reads UTF-16 in both byte orders from the BOM', () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(KOREAN, 'utf16le')]);
    expect(decodeText(new Uint8Array(le)).text).toBe(KOREAN);
    const be = Buffer.from(
      Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(KOREAN, 'utf16le').swap16()]),
    );
    expect(decodeText(new Uint8Array(be))).toEqual({ text: KOREAN, encoding: 'utf-16be' });
  });

  it('recognises EUC-KR and CP949 Korean', () => {
    expect(decodeText(iconv.encode(KOREAN, 'euc-kr'))).toEqual({ text: KOREAN, encoding: 'cp949' });
    expect(decodeText(iconv.encode(CP949_ONLY, 'cp949'))).toEqual({
      text: CP949_ONLY,
      encoding: 'cp949',
    });
  });

  it('recognises Windows-1252', () => {
    expect(decodeText(iconv.encode(FRENCH, 'windows-1252'))).toEqual({
      text: FRENCH,
      encoding: 'windows-1252',
    });
  });
});
