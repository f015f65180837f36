// Minimal GGUF v3 serializer: typed metadata key/values plus F32 tensors.
// Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
// Only what the tiny test models need; every value type is explicit so the
// file never depends on JS number guessing (llama.cpp checks KV types).

export type GgufValue =
  | { type: 'u32'; value: number }
  | { type: 'i32'; value: number }
  | { type: 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'string[]'; value: readonly string[] }
  | { type: 'i32[]'; value: readonly number[] }
  | { type: 'f32[]'; value: readonly number[] };

export type GgufTensor = {
  name: string;
  /** ggml order: shape[0] is the contiguous (row) dimension. */
  shape: readonly number[];
  data: Float32Array;
};

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
const GGUF_VERSION = 3;
const ALIGNMENT = 32;
const GGML_TYPE_F32 = 0;

// GGUF value type ids.
const T = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9 } as const;

class ByteSink {
  readonly chunks: Uint8Array[] = [];
  length = 0;
  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.length += bytes.length;
  }
  private fixed(size: number, write: (view: DataView) => void): void {
    const bytes = new Uint8Array(size);
    write(new DataView(bytes.buffer));
    this.push(bytes);
  }
  u32(v: number): void {
    this.fixed(4, (d) => d.setUint32(0, v, true));
  }
  i32(v: number): void {
    this.fixed(4, (d) => d.setInt32(0, v, true));
  }
  u64(v: number): void {
    this.fixed(8, (d) => d.setBigUint64(0, BigInt(v), true));
  }
  f32(v: number): void {
    this.fixed(4, (d) => d.setFloat32(0, v, true));
  }
  u8(v: number): void {
    this.push(Uint8Array.of(v));
  }
  str(s: string): void {
    const bytes = new TextEncoder().encode(s);
    this.u64(bytes.length);
    this.push(bytes);
  }
  raw(bytes: Uint8Array): void {
    this.push(bytes);
  }
  padTo(alignment: number): void {
    const pad = (alignment - (this.length % alignment)) % alignment;
    if (pad > 0) this.push(new Uint8Array(pad));
  }
}

function writeValue(sink: ByteSink, v: GgufValue): void {
  switch (v.type) {
    case 'u32':
      sink.u32(T.u32);
      sink.u32(v.value);
      return;
    case 'i32':
      sink.u32(T.i32);
      sink.i32(v.value);
      return;
    case 'f32':
      sink.u32(T.f32);
      sink.f32(v.value);
      return;
    case 'bool':
      sink.u32(T.bool);
      sink.u8(v.value ? 1 : 0);
      return;
    case 'string':
      sink.u32(T.string);
      sink.str(v.value);
      return;
    case 'string[]':
      sink.u32(T.array);
      sink.u32(T.string);
      sink.u64(v.value.length);
      for (const s of v.value) sink.str(s);
      return;
    case 'i32[]':
      sink.u32(T.array);
      sink.u32(T.i32);
      sink.u64(v.value.length);
      for (const n of v.value) sink.i32(n);
      return;
    case 'f32[]':
      sink.u32(T.array);
      sink.u32(T.f32);
      sink.u64(v.value.length);
      for (const n of v.value) sink.f32(n);
      return;
  }
}

/** Serializes a complete GGUF v3 file (header, KVs, tensor infos, aligned data). */
export function writeGguf(
  metadata: ReadonlyMap<string, GgufValue>,
  tensors: readonly GgufTensor[],
): Uint8Array {
  const sink = new ByteSink();
  sink.u32(GGUF_MAGIC);
  sink.u32(GGUF_VERSION);
  sink.u64(tensors.length);
  sink.u64(metadata.size);
  for (const [key, value] of metadata) {
    sink.str(key);
    writeValue(sink, value);
  }

  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    const elements = t.shape.reduce((a, b) => a * b, 1);
    if (elements !== t.data.length) {
      throw new Error(`tensor ${t.name}: shape ${t.shape} != ${t.data.length} values`);
    }
    offsets.push(offset);
    sink.str(t.name);
    sink.u32(t.shape.length);
    for (const dim of t.shape) sink.u64(dim);
    sink.u32(GGML_TYPE_F32);
    sink.u64(offset);
    offset += Math.ceil((elements * 4) / ALIGNMENT) * ALIGNMENT;
  }

  sink.padTo(ALIGNMENT);
  const dataStart = sink.length;
  tensors.forEach((t, i) => {
    sink.padTo(ALIGNMENT);
    if (sink.length - dataStart !== offsets[i]) throw new Error(`misaligned tensor ${t.name}`);
    const bytes = new Uint8Array(t.data.length * 4);
    const view = new DataView(bytes.buffer);
    for (let j = 0; j < t.data.length; j++) view.setFloat32(j * 4, t.data[j] ?? 0, true); // GGUF is little-endian
    sink.raw(bytes);
  });
  sink.padTo(ALIGNMENT);

  const out = new Uint8Array(sink.length);
  let at = 0;
  for (const chunk of sink.chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
