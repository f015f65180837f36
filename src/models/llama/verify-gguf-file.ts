import { open, stat } from 'node:fs/promises';
import { readGgufFileInfo } from 'node-llama-cpp';

/**
 * Checks that a file is a complete, readable GGUF model before llama.cpp
 * maps it: the magic, a header that parses to the end of the tensor table,
 * and, when known, the exact size announced by the server.
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
  try {
    await readGgufFileInfo(path, { sourceType: 'filesystem', logWarnings: false });
  } catch (error) {
    return `the GGUF header does not parse (${error instanceof Error ? error.message : error})`;
  }
  return undefined;
}
