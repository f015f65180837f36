/** Animals and cultural heritage of the synthetic Korean set. */
import { compose, type Dice, type Fact, type Item, josa, type Names, particle } from './korean.ts';
import type { City } from './places.ts';

interface Kind {
  base: string;
  group: string;
  size: [number, number];
  foods: string[];
  young: string;
  winter: string;
}

const KINDS: Kind[] = [
  {
    base: '딱새',
    group: '참새목의 새',
    size: [12, 18],
    foods: ['작은 곤충', '거미', '나무 열매'],
    young: '알',
    winter: '따뜻한 남쪽 지방으로 내려가 겨울을 난다',
  },
  {
    base: '도롱뇽',
    group: '양서류',
    size: [8, 15],
    foods: ['지렁이', '물벌레', '작은 달팽이'],
    young: '알',
    winter: '낙엽 더미나 땅속에서 겨울잠을 잔다',
  },
  {
    base: '붕어',
    group: '잉어과의 민물고기',
    size: [15, 30],
    foods: ['물풀', '수서 곤충', '플랑크톤'],
    young: '알',
    winter: '깊은 물 바닥에 모여 거의 움직이지 않는다',
  },
  {
    base: '하늘소',
    group: '딱정벌레목의 곤충',
    size: [2, 6],
    foods: ['참나무 수액', '나무껍질', '꽃가루'],
    young: '알',
    winter: '애벌레 상태로 나무속에서 겨울을 보낸다',
  },
  {
    base: '다람쥐',
    group: '설치류의 포유동물',
    size: [12, 20],
    foods: ['도토리', '밤', '잣'],
    young: '새끼',
    winter: '굴속에 먹이를 모아 두고 겨울잠을 잔다',
  },
  {
    base: '박쥐',
    group: '익수목의 포유동물',
    size: [4, 9],
    foods: ['나방', '모기', '날벌레'],
    young: '새끼',
    winter: '동굴 천장에 매달려 겨울잠을 잔다',
  },
];
const MARKS = [
  '검은',
  '붉은',
  '노랑',
  '긴꼬리',
  '점박이',
  '흰배',
  '큰',
  '쇠',
  '산',
  '물',
  '북방',
  '줄무늬',
];
const HABITATS = ['맑은 계곡', '습지', '활엽수림', '바닷가 갈대밭', '고산 초원', '논과 밭 주변'];

export function animals(
  dice: Dice,
  names: Names,
  mountains: readonly string[],
  count: number,
): Item[] {
  const items: Item[] = [];
  const pairs = KINDS.flatMap((kind) => MARKS.map((mark) => ({ kind, mark })));
  const monuments = dice.some(
    Array.from({ length: 400 }, (_, i) => 200 + i),
    count,
  );
  dice.some(pairs, count).forEach(({ kind, mark }, i) => {
    const name = mark + kind.base;
    const food = dice.pick(kind.foods);
    const habitat = dice.pick(HABITATS);
    const [from, to] = [dice.int(3, 6), dice.int(7, 9)];
    const researcher = names.person();
    const monument = monuments[i] as number;
    const status = dice.chance(0.5)
      ? `천연기념물 제${monument}호`
      : `멸종위기 야생생물 ${dice.int(1, 2)}급`;
    const facts: Fact[] = [
      {
        key: 'size',
        required: true,
        sentence: `${josa(name, '은')} ${josa(kind.group, '으로')}, 몸길이는 ${dice.int(...kind.size)}센티미터 안팎이다.`,
        questions: [`${name}의 크기는 어느 정도인가요?`, `${josa(name, '은')} 몸집이 얼마나 커?`],
      },
      {
        key: 'look',
        sentence: `${dice.pick(['잿빛', '갈색', '올리브색', '검푸른'])} 바탕에 ${josa(dice.pick(['흰 점', '노란 줄', '붉은 반점', '검은 띠']), '이')} 있어 다른 종과 쉽게 구별된다.`,
      },
      {
        key: 'habitat',
        sentence: `주로 ${habitat}에 살며, 국내에서는 ${dice.pick(mountains)} 일대에서 자주 관찰된다.`,
        questions: [`${josa(name, '은')} 주로 어디에 서식하나?`],
      },
      {
        key: 'food',
        sentence: `${josa(food, '을')} 즐겨 먹고, ${dice.pick(['해가 진 뒤에 먹이를 찾아 나선다', '이른 아침에 가장 활발하게 움직인다'])}.`,
        questions: [`${josa(name, '은')} 무엇을 먹고 살아?`, `${name}의 먹이는?`],
      },
      {
        key: 'breeding',
        sentence: `번식기는 ${from}월부터 ${to}월까지이며, 한 번에 ${dice.int(2, 9)}${kind.young === '알' ? '개 안팎의 알을' : '마리 안팎의 새끼를'} 낳는다.`,
        questions: [
          `${josa(name, '이')} ${kind.young === '알' ? '알을 까는' : '새끼를 치는'} 때는 언제인가?`,
        ],
      },
      {
        key: 'winter',
        sentence: `겨울에는 ${kind.winter}.`,
        questions: [`${josa(name, '은')} 추운 계절을 어떻게 보내나요?`],
      },
      {
        key: 'status',
        sentence: `서식지가 줄어들어 ${josa(status, '으로')} 지정되어 보호받고 있다.`,
        questions: status.startsWith('천연')
          ? [`${status}로 지정된 동물은 무엇인가?`]
          : [`${josa(name, '은')} 어떤 보호를 받고 있어?`],
      },
      {
        key: 'discovery',
        sentence: `${dice.int(1905, 1990)}년 ${researcher} 박사가 처음 학계에 보고하였다.`,
        questions: [`${josa(name, '을')} 처음 발표한 학자는 누구인가?`],
      },
      {
        key: 'lifespan',
        sentence: `수명은 야생에서 ${dice.int(2, 12)}년 정도이며, 짝짓기 철이 되면 수컷의 몸 빛깔이 한층 짙어진다.`,
        questions: [`${josa(name, '은')} 자연에서 몇 년쯤 살아?`],
      },
      {
        key: 'name',
        sentence: `이름 앞의 '${mark}'${particle(mark, '은')} ${dice.pick(['몸의 생김새', '사는 곳', '꼬리의 모양', '무늬'])}에서 따온 말이다.`,
      },
      {
        key: 'riddle',
        sentence: '',
        needs: ['habitat', 'food'],
        questions: [`${habitat}에 살면서 ${josa(food, '을')} 즐겨 먹는 ${kind.base}는?`],
      },
    ];
    const { text, question, asks } = compose(dice, facts, i);
    items.push({ id: `animal-${i}`, topic: 'animal', title: name, text, question, asks });
  });
  return items;
}

const HERITAGE: [string, string, string][] = [
  ['삼층 석탑', '화강암', '기단부에 여덟 명의 신장이 돋을새김되어 있다'],
  ['오층 석탑', '화강암', '지붕돌 네 귀퉁이가 살짝 들려 경쾌한 느낌을 준다'],
  ['청동 범종', '청동', '몸체에 하늘을 나는 선녀 네 명이 새겨져 있다'],
  ['마애 여래 좌상', '바위', '커다란 바위 면에 부처의 앉은 모습을 새긴 것이다'],
  ['목조 아미타불', '나무', '금박을 입힌 얼굴에 온화한 미소가 남아 있다'],
];
const RELICS = ['사리 장엄구', '금동 불상', '청자 사리병', '두루마리 불경', '은제 사리함'];

export function heritage(dice: Dice, names: Names, places: readonly City[], count: number): Item[] {
  const items: Item[] = [];
  const numbers = dice.some(
    Array.from({ length: 900 }, (_, i) => 100 + i),
    count,
  );
  for (let i = 0; i < count; i++) {
    const temple = names.fresh('사');
    const [kind, material, look] = dice.pick(HERITAGE);
    const name = `${temple} ${kind}`;
    const place = dice.pick(places);
    const era = dice.pick(['통일 신라', '고려 전기', '고려 후기', '조선 초기']);
    const grade = dice.chance(0.3) ? '국보' : '보물';
    const relic = dice.pick(RELICS);
    const found = dice.int(1930, 2015);
    const donor = names.person();
    const museum = `${place.stem} ${dice.pick(['박물관', '역사관', '불교 박물관'])}`;
    const facts: Fact[] = [
      {
        key: 'era',
        required: true,
        sentence: `${josa(name, '은')} ${place.province} ${place.name} ${temple} 경내에 있는 ${era} 시대의 유물이다.`,
        questions: [`${josa(name, '은')} 언제 만들어졌나?`, `${name}의 제작 시기는?`],
      },
      {
        key: 'size',
        sentence: `높이는 ${dice.int(12, 95) / 10}미터이고, ${josa(material, '으로')} 만들어졌다.`,
        questions: [`${name}의 높이는 얼마나 되나요?`],
      },
      { key: 'look', sentence: `${look}.` },
      {
        key: 'relic',
        sentence: `${found}년 해체 수리 때 안에서 ${josa(relic, '이')} 나와 학계의 관심을 모았다.`,
        questions: [`${name}에서 발견된 유물은 무엇인가?`],
      },
      {
        key: 'designation',
        sentence: `${dice.int(1962, 2020)}년 ${grade} 제${numbers[i]}호로 지정되었다.`,
        questions: [`${grade} 제${numbers[i]}호는 어떤 문화재인가?`],
      },
      {
        key: 'legend',
        sentence: `${names.fresh()} 스님이 꿈에서 본 모습대로 만들었다는 이야기가 전해 내려온다.`,
        questions: [`${josa(name, '을')} 두고 전해 오는 설화는?`],
      },
      {
        key: 'donor',
        sentence: `몸체에 새겨진 글에 따르면 ${josa(donor, '이라')}는 사람이 재물을 시주하여 만들었다고 한다.`,
        questions: [`${name}의 제작 비용을 댄 인물은?`],
      },
      {
        key: 'museum',
        sentence: `함께 나온 유물들은 지금 ${museum}에 옮겨져 전시되고 있으며, ${dice.int(1970, 2020)}년에 기울어진 부분을 바로잡는 보수 공사가 있었다.`,
        questions: [`${name}에서 출토된 유물은 어디서 볼 수 있나?`],
      },
      {
        key: 'riddle',
        sentence: '',
        needs: ['relic'],
        questions: [`${found}년 해체 수리 때 ${josa(relic, '이')} 발견된 ${josa(kind, '은')}?`],
      },
    ];
    const { text, question, asks } = compose(dice, facts, i);
    items.push({ id: `heritage-${i}`, topic: 'heritage', title: name, text, question, asks });
  }
  return items;
}
