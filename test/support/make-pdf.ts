import { deflateSync } from 'node:zlib';

export type PdfPage =
  | { text: string[] }
  | { image: { width: number; height: number; gray: Uint8Array } }
  | { deflatedImage: { width: number; height: number; data: Buffer } };

/**
 * A small valid PDF: pages of Helvetica text lines (ASCII), or pages that are one grayscale
 * image and nothing else (what a scanner produces: no text layer).
 */
export function makePdf(pages: PdfPage[]): Uint8Array {
  const objects: Buffer[] = [];
  const add = (body: Buffer | string) => {
    objects.push(typeof body === 'string' ? Buffer.from(body, 'latin1') : body);
    return objects.length;
  };
  const stream = (dict: string, data: Buffer) =>
    Buffer.concat([
      Buffer.from(`<< ${dict} /Length ${data.length} >>\nstream\n`, 'latin1'),
      data,
      Buffer.from('\nendstream', 'latin1'),
    ]);

  const catalog = add('');
  const pagesId = add('');
  const font = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  const kids: number[] = [];
  for (const page of pages) {
    let resources: string;
    let content: string;
    let width = 612;
    let height = 792;
    if ('text' in page) {
      resources = `<< /Font << /F1 ${font} 0 R >> >>`;
      content = `BT /F1 14 Tf 72 720 Td 18 TL ${page.text.map((line) => `(${line.replace(/[()\\]/g, '\\$&')}) '`).join(' ')} ET`;
    } else {
      const image =
        'image' in page
          ? { ...page.image, data: deflateSync(page.image.gray) }
          : page.deflatedImage;
      ({ width, height } = image);
      const imageId = add(
        stream(
          `/Type /XObject /Subtype /Image /Width ${width} /Height ${height} /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode`,
          image.data,
        ),
      );
      resources = `<< /XObject << /Im1 ${imageId} 0 R >> >>`;
      content = `q ${width} 0 0 ${height} 0 0 cm /Im1 Do Q`;
    }
    const contents = add(stream('', Buffer.from(content, 'latin1')));
    kids.push(
      add(
        `<< /Type /Page /Parent ${pagesId} 0 R /MediaBox [0 0 ${width} ${height}] /Resources ${resources} /Contents ${contents} 0 R >>`,
      ),
    );
  }
  objects[catalog - 1] = Buffer.from(`<< /Type /Catalog /Pages ${pagesId} 0 R >>`);
  objects[pagesId - 1] = Buffer.from(
    `<< /Type /Pages /Kids [${kids.map((id) => `${id} 0 R`).join(' ')}] /Count ${kids.length} >>`,
  );

  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0]?.length ?? 0;
  objects.forEach((body, index) => {
    offsets.push(length);
    const object = Buffer.concat([
      Buffer.from(`${index + 1} 0 obj\n`, 'latin1'),
      body,
      Buffer.from('\nendobj\n', 'latin1'),
    ]);
    parts.push(object);
    length += object.length;
  });
  const xref = [
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`,
    ...offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`),
    `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R >>\nstartxref\n${length}\n%%EOF\n`,
  ].join('');
  parts.push(Buffer.from(xref, 'latin1'));
  return new Uint8Array(Buffer.concat(parts));
}

/** A `side`×`side` white scan that deflates to about 0.1 % of what it unpacks to. */
export function imageBomb(side: number): PdfPage {
  return {
    deflatedImage: { width: side, height: side, data: deflateSync(Buffer.alloc(side * side, 255)) },
  };
}
