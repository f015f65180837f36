import { open, stat } from 'node:fs/promises';
import { type GgufFileInfo, readGgufFileInfo } from 'node-llama-cpp';

/**
 * Checks that a file is a complete, readable GGUF model before llama.cpp
 * maps it: the magic, a header that parses to the end of the tensor table,
 * tensor data that the file holds to its end, and, when known, the exact size
 * announced by the server.
 * Returns why it is not, or undefined when it is fine.
 */
export async function verifyGgufFile(
  path: string,
  expectedSize?: number,
): Promise<string | undefined> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch {
    return 'the file is missing';
  }
  if (expectedSize !== undefined && expectedSize > 0 && size !== expectedSize) {
    return `the file has ${size} bytes, the server announced ${expectedSize}`;
  }
  const file = await open(path, 'r');
  try {
    const magic = Buffer.alloc(4);
    await file.read(magic, 0, 4, 0);
    if (magic.toString('latin1') !== 'GGUF') return 'the file is not a GGUF model';
  } finally {
    await file.close();
  }
  let info: GgufFileInfo;
  try {
    info = await readGgufFileInfo(path, { sourceType: 'filesystem', logWarnings: false });
  } catch (error) {
    return `the GGUF header does not parse (${error instanceof Error ? error.message : error})`;
  }
  // A host serving a cut copy with its own (short) length said consistently passed the
  // size check, and a header that parses says nothing of the tensor data after it: the file
  // was marked complete, and llama.cpp refused it at every start.
  const end = tensorDataEnd(info);
  if (end > size) return `the file has ${size} bytes, its tensor data ends at ${end}`;
  return undefined;
}

/**
 * Bytes and elements per block of the ggml types whose block layout is fixed (ggml's type
 * traits). Tensors of other types are not measured: their end is not checked.
 */
const GGML_BLOCKS: Readonly<Record<number, readonly [bytes: number, elements: number]>> = {
  0: [4, 1], // F32
  1: [2, 1], // F16
  2: [18, 32], // Q4_0
  3: [20, 32], // Q4_1
  6: [22, 32], // Q5_0
  7: [24, 32], // Q5_1
  8: [34, 32], // Q8_0
  9: [36, 32], // Q8_1
  10: [84, 256], // Q2_K
  11: [110, 256], // Q3_K
  12: [144, 256], // Q4_K
  13: [176, 256], // Q5_K
  14: [210, 256], // Q6_K
  15: [292, 256], // Q8_K
  24: [1, 1], // I8
  25: [2, 1], // I16
  26: [4, 1], // I32
  27: [8, 1], // I64
  28: [8, 1], // F64
  30: [2, 1], // BF16
};

/** Where the last measurable tensor of this file (the first part of a split model) ends. */
function tensorDataEnd(info: GgufFileInfo): number {
  let end = 0;
  for (const tensor of info.tensorInfo ?? []) {
    if (tensor.filePart !== undefined && tensor.filePart !== 1) continue;
    const block = GGML_BLOCKS[tensor.ggmlType];
    if (!block) continue;
    const elements = tensor.dimensions.reduce<number>((n, d) => n * Number(d), 1);
    const bytes = Math.ceil(elements / block[1]) * block[0];
    end = Math.max(end, Number(tensor.fileOffset) + bytes);
  }
  return end;
}
