/**
 * Benchmark 2: Korean retrieval. Twenty short passages written for this check and one
 * question each whose key words carry other particles or endings than in the passage
 * (`서울에서` in the text, `서울의` in the question). Recall@5 of BM25 over whitespace tokens
 * (written here) against Parley's lexical search through the real code path.
 *
 *   node bench/korean-retrieval.ts [embedded|server]
 */
import { openBenchStore } from './support/document-store.ts';
import { machineReport } from './support/machine.ts';

const engine = (process.argv[2] ?? 'embedded') as 'embedded' | 'server';

const CASES: { passage: string; question: string }[] = [
  {
    passage:
      '세종대왕은 1443년에 훈민정음을 창제하였다. 백성들이 글을 쉽게 익히도록 만든 문자이다.',
    question: '훈민정음의 창제 시기는 언제인가요?',
  },
  {
    passage: '서울에서 가장 오래된 전통 시장은 광장시장이다. 빈대떡과 육회가 유명하다.',
    question: '서울의 오래된 시장은 어디야?',
  },
  {
    passage: '부산은 해운대 해수욕장으로 유명하며 여름마다 피서객이 몰린다.',
    question: '해운대가 있는 도시에는 피서객이 언제 많아?',
  },
  {
    passage: '제주도에는 한라산이 있고 섬 전체가 화산 활동으로 만들어졌다.',
    question: '한라산은 어느 섬에 있지?',
  },
  {
    passage: '김치는 배추와 고춧가루로 담그며 발효가 될수록 신맛이 강해진다.',
    question: '배추로 만드는 발효 음식의 맛은?',
  },
  {
    passage: '태권도는 대한민국의 국기로 발차기 기술이 특징인 무술이다.',
    question: '발차기가 특징인 한국 무술이 뭐야?',
  },
  {
    passage: '경복궁은 조선 왕조의 법궁으로 1395년에 지어졌다.',
    question: '조선의 법궁은 언제 지어졌어?',
  },
  {
    passage: '한강 공원에서는 봄마다 벚꽃 축제가 열리고 자전거를 빌릴 수 있다.',
    question: '한강에서 벚꽃 축제가 열리나요?',
  },
  {
    passage: '설날에는 떡국을 먹고 어른들께 세배를 드리는 풍습이 있다.',
    question: '세배는 어떤 명절의 풍습이야?',
  },
  {
    passage: '추석은 음력 팔월 보름으로 송편을 빚고 차례를 지낸다.',
    question: '송편을 빚는 명절은?',
  },
  {
    passage: '반도체 산업은 한국 수출에서 가장 큰 비중을 차지한다.',
    question: '한국의 수출 가운데 반도체가 차지하는 비중',
  },
  {
    passage: 'KTX를 타면 서울역에서 부산역까지 약 두 시간 반이 걸린다.',
    question: '서울역부터 부산역까지 기차로 얼마나 걸려?',
  },
  {
    passage: '지하철 2호선은 서울 도심을 순환하는 노선이다.',
    question: '순환 노선인 지하철은 몇 호선인가?',
  },
  {
    passage: '비빔밥은 밥 위에 나물과 고추장을 올려 비벼 먹는 음식이다.',
    question: '나물과 고추장을 넣는 음식은 뭐예요?',
  },
  {
    passage: '이순신 장군은 거북선을 이끌고 한산도 대첩에서 승리하였다.',
    question: '거북선으로 승리한 장군의 이름은?',
  },
  {
    passage: '백두산은 한반도에서 가장 높은 산으로 정상에 천지가 있다.',
    question: '천지는 어느 산의 정상에 있나요?',
  },
  {
    passage: '판소리는 소리꾼과 고수가 함께 공연하는 전통 음악이다.',
    question: '고수와 소리꾼이 공연하는 음악',
  },
  {
    passage: '인천국제공항은 영종도에 있으며 아시아의 주요 허브 공항이다.',
    question: '영종도의 공항은 어떤 곳이야?',
  },
  {
    passage: '전주는 한옥마을과 비빔밥으로 널리 알려진 도시이다.',
    question: '한옥마을이 있는 도시가 어디지?',
  },
  {
    passage: '독서는 어휘력을 키우고 집중력을 높이는 데 도움이 된다.',
    question: '어휘력과 집중력에 도움이 되는 활동',
  },
];

/** BM25 (k1 0.9, b 0.4) over whitespace tokens, the way a plain full-text index splits Korean. */
function whitespaceRecall(k: number): number {
  const tokens = (text: string) =>
    text
      .toLowerCase()
      .split(/[\s.,?!]+/)
      .filter(Boolean);
  const docs = CASES.map((c) => tokens(c.passage));
  const avgdl = docs.reduce((sum, doc) => sum + doc.length, 0) / docs.length;
  let found = 0;
  CASES.forEach((c, expected) => {
    const scores = docs.map((doc) => {
      let score = 0;
      for (const term of new Set(tokens(c.question))) {
        const df = docs.filter((d) => d.includes(term)).length;
        const tf = doc.filter((t) => t === term).length;
        if (!tf) continue;
        const idf = Math.log(1 + (docs.length - df + 0.5) / (df + 0.5));
        score += (idf * tf * 1.9) / (tf + 0.9 * (0.6 + (0.4 * doc.length) / avgdl));
      }
      return score;
    });
    const ranked = scores
      .map((score, i) => ({ score, i }))
      .filter((x) => x.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, k);
    if (ranked.some((x) => x.i === expected)) found++;
  });
  return found / CASES.length;
}

const store = await openBenchStore(engine, { maxTokens: 256, overlapTokens: 32 });
let parleyFound = 0;
try {
  for (const [i, c] of CASES.entries()) {
    await store.service.ingest({
      source: `ko/${i}.txt`,
      filename: `${i}.txt`,
      contentType: 'text/plain',
      bytes: Buffer.byteLength(c.passage),
      document: { kind: 'text', pages: [{ page: null, text: c.passage }], ocrPages: [] },
    });
  }
  for (const [i, c] of CASES.entries()) {
    const { hits } = await store.service.search(c.question, { limit: 5 });
    if (hits.some((hit) => hit.source === `ko/${i}.txt`)) parleyFound++;
  }
} finally {
  await store.close();
}

console.log(
  [
    `## Korean retrieval: ${CASES.length} questions whose words carry other particles, ${engine} engine`,
    '',
    '```',
    machineReport(),
    `command: node bench/korean-retrieval.ts ${process.argv.slice(2).join(' ')}`,
    '```',
    '',
    '| tokens | Recall@5 |',
    '| --- | --- |',
    `| whitespace tokens, BM25 (baseline) | ${whitespaceRecall(5).toFixed(2)} |`,
    `| Parley: Hangul character bigrams, BM25 in the database | ${(parleyFound / CASES.length).toFixed(2)} |`,
  ].join('\n'),
);
