import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { temporaryName } from '../../src/documents/upload-file.ts';
import { checkName } from '../../src/documents/upload-names.ts';

describe('temporaryName', () => {
  it('keeps only a plain extension of the upload, so no name can leave the folder', () => {
    for (const hostile of [
      '../../etc/passwd',
      '/etc/passwd',
      'a\u0000b.txt',
      `${'x'.repeat(4096)}.pdf`,
      '..\\..\\win.ini',
      '.',
    ]) {
      const name = temporaryName(hostile);
      expect(name).toMatch(/^[0-9a-f-]{36}\.[a-z0-9]{1,16}$/);
      expect(resolve('/uploads', name).startsWith(join('/uploads', '/'))).toBe(true);
    }
    expect(temporaryName('Report.PDF')).toMatch(/\.pdf$/);
    expect(temporaryName('noextension')).toMatch(/\.bin$/);
    expect(temporaryName('weird.ex/t')).toMatch(/\.bin$/);
  });
});

describe('checkName', () => {
  it('accepts slashes, dots and any script', () => {
    expect(checkName('source', '../manuals/설명서 v2.pdf')).toBe('../manuals/설명서 v2.pdf');
  });

  it('refuses empty, over-long and control-character names with a 422', () => {
    for (const bad of ['', '   ', 'a'.repeat(1025), 'nul\u0000.txt', 'line\nbreak']) {
      expect(() => checkName('source', bad)).toThrow(expect.objectContaining({ status: 422 }));
    }
    expect(checkName('source', '가'.repeat(1024))).toHaveLength(1024);
  });
});
