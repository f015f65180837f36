/**
 * A tiny sentence-embedding model in the layout transformers.js downloads from a model hub
 * (`config.json`, `tokenizer.json`, `tokenizer_config.json`, `onnx/model_quantized.onnx`), so
 * the real loading code of the `local` embedder runs on something real without downloading
 * weights. The ONNX graph is one Gather: each word's row of a fixed embedding table, which
 * transformers.js then mean-pools and normalises as it does for any BERT-like model. Texts
 * sharing words therefore get similar vectors.
 */

const WORDS = [
  'seoul',
  'market',
  'busan',
  'beach',
  'parley',
  'install',
  'backup',
  'data',
  'directory',
  'guide',
  'npm',
  'start',
  'copy',
  'night',
  'korean',
  'food',
  'the',
  'a',
  'is',
  'to',
  'of',
  'and',
  'in',
  'how',
  'what',
  'where',
  'passage:',
  'query:',
];
const SPECIAL = ['[UNK]', '[PAD]'];
const DIMENSION = 8;

/** File path (inside the model's folder) → contents. */
export function tinyEmbeddingModel(): Map<string, Uint8Array> {
  const vocab: Record<string, number> = {};
  [...SPECIAL, ...WORDS].forEach((word, id) => {
    vocab[word] = id;
  });
  const size = SPECIAL.length + WORDS.length;
  const table = new Float32Array(size * DIMENSION);
  let seed = 7;
  for (let i = 0; i < table.length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    table[i] = seed / 2 ** 30 - 1;
  }
  const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
  return new Map([
    [
      'config.json',
      json({
        model_type: 'bert',
        hidden_size: DIMENSION,
        vocab_size: size,
        architectures: ['BertModel'],
      }),
    ],
    [
      'tokenizer_config.json',
      json({
        tokenizer_class: 'PreTrainedTokenizer',
        model_max_length: 128,
        pad_token: '[PAD]',
        unk_token: '[UNK]',
      }),
    ],
    [
      'tokenizer.json',
      json({
        version: '1.0',
        truncation: null,
        padding: null,
        added_tokens: SPECIAL.map((content, id) => ({
          id,
          content,
          single_word: false,
          lstrip: false,
          rstrip: false,
          normalized: false,
          special: true,
        })),
        normalizer: { type: 'Lowercase' },
        pre_tokenizer: { type: 'WhitespaceSplit' },
        post_processor: null,
        decoder: null,
        model: { type: 'WordLevel', vocab, unk_token: '[UNK]' },
      }),
    ],
    ['onnx/model_quantized.onnx', gatherModel(table, size)],
  ]);
}

// Protocol Buffers, just what an ONNX ModelProto needs.
const varint = (value: number): number[] => {
  const bytes: number[] = [];
  let v = value;
  while (v > 0x7f) {
    bytes.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  bytes.push(v);
  return bytes;
};
const field = (number: number, wire: number) => varint((number << 3) | wire);
const int = (number: number, value: number) => [...field(number, 0), ...varint(value)];
const bytesField = (number: number, value: ArrayLike<number>) => [
  ...field(number, 2),
  ...varint(value.length),
  ...Array.from(value),
];
const str = (number: number, value: string) => bytesField(number, new TextEncoder().encode(value));

const INT64 = 7;
const FLOAT = 1;

/** ValueInfoProto of a tensor whose dimensions are named (symbolic) or fixed. */
function tensorInfo(name: string, type: number, dims: (string | number)[]): number[] {
  const shape = dims.flatMap((dim) =>
    bytesField(1, typeof dim === 'string' ? str(2, dim) : int(1, dim)),
  );
  const tensorType = [...int(1, type), ...bytesField(2, shape)];
  return [...str(1, name), ...bytesField(2, bytesField(1, tensorType))];
}

function gatherModel(table: Float32Array, vocabSize: number): Uint8Array {
  const initializer = [
    ...int(1, vocabSize),
    ...int(1, DIMENSION),
    ...int(2, FLOAT),
    ...str(8, 'embeddings'),
    ...bytesField(9, new Uint8Array(table.buffer)),
  ];
  const node = [
    ...str(1, 'embeddings'),
    ...str(1, 'input_ids'),
    ...str(2, 'last_hidden_state'),
    ...str(3, 'gather'),
    ...str(4, 'Gather'),
    ...bytesField(5, [...str(1, 'axis'), ...int(3, 0), ...int(20, 2)]),
  ];
  const graph = [
    ...bytesField(1, node),
    ...str(2, 'tiny-embedder'),
    ...bytesField(5, initializer),
    ...bytesField(11, tensorInfo('input_ids', INT64, ['batch', 'sequence'])),
    ...bytesField(11, tensorInfo('attention_mask', INT64, ['batch', 'sequence'])),
    ...bytesField(12, tensorInfo('last_hidden_state', FLOAT, ['batch', 'sequence', DIMENSION])),
  ];
  const model = [
    ...int(1, 8), // ir_version
    ...str(2, 'parley-tests'),
    ...bytesField(7, graph),
    ...bytesField(8, [...str(1, ''), ...int(2, 13)]), // opset 13
  ];
  return new Uint8Array(model);
}
