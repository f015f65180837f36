import { describe, expect, it } from 'vitest';
import { detectType } from '../../src/documents/extraction/detect-type.ts';
import { makeDocx, zip } from '../support/make-docx.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('detectType', () => {
  it('reads a PDF from its header, whatever its name', () => {
    expect(detectType(bytes('%PDF-1.7\n%âãÏÓ\n1 0 obj'), 'scan.bin')).toEqual({ kind: 'pdf' });
    expect(detectType(bytes('junk before\n%PDF-1.4\n'), 'x')).toEqual({ kind: 'pdf' });
  });

  it('does not parse a .pdf whose content is not a PDF as one', () => {
    expect(detectType(bytes('Just some notes, saved with the wrong name.'), 'notes.pdf')).toEqual({
      kind: 'text',
    });
    expect(detectType(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0]), 'photo.pdf')).toEqual({
      unsupported: 'a PNG image',
    });
  });

  it('keeps a text file named .bin as text, and uses the name only among text formats', () => {
    expect(detectType(bytes('plain words'), 'upload.bin')).toEqual({ kind: 'text' });
    expect(detectType(bytes('# Title\n\nbody'), 'README.md')).toEqual({ kind: 'markdown' });
    expect(detectType(bytes('<p>hi</p>'), 'page.htm')).toEqual({ kind: 'html' });
    expect(detectType(bytes('  <!DOCTYPE html><html><body>x'), 'saved.txt')).toEqual({
      kind: 'html',
    });
  });

  it('takes UTF-16 with a BOM as text, though it is full of NUL bytes', () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hello world', 'utf16le')]);
    expect(detectType(new Uint8Array(utf16), 'notes')).toEqual({ kind: 'text' });
    expect(detectType(new Uint8Array(Buffer.from('hello world', 'utf16le')), 'notes.txt')).toEqual({
      unsupported: 'a binary file of an unknown type',
    });
  });

  it('tells a Word document from another ZIP', () => {
    expect(detectType(makeDocx([{ text: 'hi' }]), 'letter')).toEqual({ kind: 'docx' });
    expect(detectType(zip([['photos/a.txt', 'x']]), 'archive.zip')).toEqual({
      unsupported: 'a ZIP archive that is not a Word (.docx) document',
    });
  });

  it('refuses binaries it does not read', () => {
    expect(detectType(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]), 'a.txt')).toEqual({
      unsupported: 'an executable',
    });
    expect(detectType(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 201]), 'data')).toEqual({
      unsupported: 'a binary file of an unknown type',
    });
  });
});
