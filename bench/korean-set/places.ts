/** Cities and counties, and mountains, of the synthetic Korean set. */
import { compose, type Dice, type Item, josa, type Names } from './korean.ts';

export interface City {
  name: string;
  stem: string;
  province: string;
}

const PROVINCES = [
  '경기도',
  '강원도',
  '충청북도',
  '충청남도',
  '전라북도',
  '전라남도',
  '경상북도',
  '경상남도',
];
const PRODUCTS = [
  '사과',
  '배',
  '인삼',
  '한우',
  '마늘',
  '고추',
  '복숭아',
  '포도',
  '곶감',
  '쌀',
  '굴',
  '미역',
  '대추',
  '밤',
  '녹차',
  '딸기',
  '수박',
  '참외',
  '표고버섯',
  '멸치',
];
const INDUSTRIES = [
  '자동차 부품',
  '섬유',
  '조선',
  '석유 화학',
  '반도체',
  '제지',
  '시멘트',
  '관광',
  '수산 가공',
  '식품 가공',
  '철강',
  '도자기',
];
const SIDES = ['동쪽', '서쪽', '남쪽', '북쪽'];

export function cities(dice: Dice, names: Names, count: number): { items: Item[]; cities: City[] } {
  const items: Item[] = [];
  const made: City[] = [];
  for (let i = 0; i < count; i++) {
    const stem = names.fresh();
    const kind = dice.chance(0.6) ? '시' : '군';
    const name = stem + kind;
    const province = dice.pick(PROVINCES);
    const old = names.fresh(dice.pick(['현', '군', '주']));
    const river = names.fresh(dice.pick(['강', '천']));
    const mountain = names.fresh('산');
    const [p1, p2] = dice.some(PRODUCTS, 2) as [string, string];
    const [ind1, ind2] = dice.some(INDUSTRIES, 2) as [string, string];
    const [from, to] = dice.some(SIDES, 2) as [string, string];
    const festival = `${dice.chance(0.5) ? p1 : river} 축제`;
    const month = dice.int(3, 11);
    const landmark = names.fresh(dice.pick(['사', '서원', '산성', '향교', '정']));
    const pop = dice.int(3, 95);
    const university = names.fresh('대학교');
    const facts = [
      {
        key: 'intro',
        required: true,
        sentence: `${josa(name, '은')} ${province} ${dice.pick(['동부', '서부', '남부', '북부', '중부'])}에 있는 ${kind}이다.`,
      },
      {
        key: 'old-name',
        sentence: dice.chance(0.5)
          ? `조선 시대에는 ${josa(old, '이라')}고 불렸으며, ${dice.int(1895, 1995)}년 행정 구역 개편 때 지금의 이름을 얻었다.`
          : `삼국 시대에는 ${josa(old, '이라')} 불렸고, ${dice.int(1895, 1995)}년에 주변 면을 합쳐 현재의 ${josa(kind, '이')} 되었다.`,
        questions: [
          `예전에 ${josa(old, '이라')} 불리던 고장은 지금 어디인가?`,
          `옛 지명이 ${josa(old, '이')}었던 곳의 오늘날 이름은?`,
        ],
      },
      {
        key: 'population',
        sentence: dice.chance(0.5)
          ? `${dice.int(2015, 2023)}년 기준 인구는 약 ${pop}만 명이고, 면적은 ${dice.int(200, 1200)}제곱킬로미터이다.`
          : `면적은 ${dice.int(200, 1200)}제곱킬로미터이며, ${dice.int(2015, 2023)}년 현재 약 ${pop}만 명이 살고 있다.`,
        questions: [
          `${name}에는 사람이 얼마나 살아?`,
          `${name}의 주민 수는 대략 몇 명인가요?`,
          `${name} 인구가 얼마나 되나요?`,
        ],
      },
      {
        key: 'river',
        sentence: `${josa(river, '이')} 고장 한가운데를 ${from}에서 ${josa(to, '으로')} 가로질러 흐르며, 북쪽에는 해발 ${dice.int(300, 1400)}미터의 ${josa(mountain, '이')} 솟아 있다.`,
        questions: [
          `${josa(river, '이')} 한복판을 지나는 도시는 어디인가?`,
          `${name} 북쪽에 있는 산의 높이는 얼마야?`,
        ],
      },
      {
        key: 'climate',
        sentence: dice.pick([
          '내륙 분지에 자리 잡고 있어 여름에는 무덥고 겨울에는 추우며 일교차가 크다.',
          `바다와 가까워 겨울이 비교적 따뜻하고 연평균 기온은 ${dice.int(11, 15)}도 안팎이다.`,
          `산지가 많아 평야가 좁고, 연평균 강수량은 ${dice.int(11, 16)}00밀리미터 정도이다.`,
        ]),
      },
      {
        key: 'industry',
        sentence: `주요 산업은 ${josa(ind1, '과')} ${ind2}이며, ${dice.int(1970, 2010)}년에 조성된 산업 단지에 ${dice.int(3, 30)}0여 개의 기업이 입주해 있다.`,
        questions: [
          `${name}의 경제를 이끄는 산업은 무엇인가?`,
          `${name}에는 어떤 산업이 발달했나요?`,
        ],
      },
      {
        key: 'products',
        sentence: dice.chance(0.5)
          ? `특산물로는 ${josa(p1, '과')} ${josa(p2, '이')} 널리 알려져 있다.`
          : `이 지역에서 나는 ${josa(p1, '은')} 맛이 좋기로 이름나 있으며, ${p2} 재배도 활발하다.`,
        questions: [`${name}에서 많이 나는 특산품은 무엇인가요?`, `${name}의 대표 농산물은?`],
      },
      {
        key: 'festival',
        sentence: `해마다 ${month}월이면 ${josa(festival, '이')} 열려 전국에서 관광객이 찾아온다.`,
        questions: [
          `${province}에서 ${month}월마다 ${josa(festival, '이')} 열리는 곳은?`,
          `${name}의 ${festival} 시기는 언제인가?`,
        ],
      },
      {
        key: 'landmark',
        sentence: `대표적인 문화유산으로는 ${dice.pick(['고려', '조선 초기', '조선 후기', '통일 신라'])} 때 세워진 ${josa(landmark, '이')} 있다.`,
        questions: [
          `${josa(landmark, '은')} 어느 고장에 있나요?`,
          `${josa(landmark, '이')} 있는 도시는?`,
        ],
      },
      {
        key: 'transport',
        sentence: dice.chance(0.5)
          ? `${names.fresh('선')} 철도와 ${dice.int(3, 79)}번 국도가 지나 교통이 편리하다.`
          : `${names.fresh(' 고속도로')}의 나들목이 두 곳 있어 수도권과 쉽게 오갈 수 있다.`,
      },
      {
        key: 'districts',
        sentence: `행정 구역은 ${dice.int(1, 4)}개 읍, ${dice.int(3, 12)}개 면, ${dice.int(2, 15)}개 동으로 이루어져 있다.`,
        questions: [`${name}에는 읍면동이 몇 개나 있나?`],
      },
      {
        key: 'university',
        sentence: `${josa(university, '을')} 비롯해 대학 ${dice.int(2, 6)}곳이 있어 젊은 인구의 비율이 높은 편이다.`,
        questions: [`${josa(university, '은')} 어느 지역에 있는 학교인가?`],
      },
      {
        key: 'symbols',
        sentence: `${kind}의 상징 나무는 ${dice.pick(['은행나무', '느티나무', '소나무', '배롱나무', '벚나무'])}이고, 상징 새는 ${dice.pick(['까치', '백로', '꾀꼬리', '두루미', '황조롱이'])}이다.`,
        questions: [`${josa(name, '을')} 대표하는 나무와 새는?`],
      },
      {
        key: 'history',
        sentence: `1919년 3월에는 장터에서 만세 운동이 일어나 주민 ${dice.int(2, 30)}00여 명이 참여하였다.`,
        questions: [`${name}에서 일어난 3·1 운동에는 몇 명이 함께했나?`],
      },
      {
        key: 'riddle',
        sentence: '',
        needs: ['products', 'industry'],
        questions: [
          `${province}에서 ${josa(p1, '이')} 많이 나고 ${ind1} 산업이 발달한 ${kind === '시' ? '도시는' : '군은'}?`,
        ],
      },
    ];
    const { text, question, asks } = compose(dice, facts, i);
    items.push({ id: `city-${i}`, topic: 'city', title: name, text, question, asks });
    made.push({ name, stem, province });
  }
  return { items, cities: made };
}

const ROCKS: [string, string][] = [
  ['화강암', '봉우리마다 기암괴석이 많다'],
  ['석회암', '곳곳에 석회 동굴이 발달해 있다'],
  ['편마암', '능선이 부드럽고 흙이 두텁다'],
];
const RARE_PLANTS = [
  '구상나무',
  '금강초롱꽃',
  '솜다리',
  '산작약',
  '모데미풀',
  '깽깽이풀',
  '노랑무늬붓꽃',
  '기생꽃',
];
const ORIGINS = [
  '옛날 용이 하늘로 올라갔다는 전설',
  '봉우리 모양이 연꽃을 닮았다는 데',
  '신라의 한 장수가 말을 매어 두었다는 이야기',
  '해가 가장 먼저 뜨는 산이라는 뜻',
];

export function mountains(
  dice: Dice,
  names: Names,
  places: readonly City[],
  count: number,
): { items: Item[]; mountains: string[] } {
  const items: Item[] = [];
  const made: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = names.fresh('산');
    const [a, b] = dice.some(places, 2) as [City, City];
    const [rock, look] = dice.pick(ROCKS);
    const peak = names.fresh('봉');
    const falls = names.fresh(' 폭포');
    const temple = names.fresh('사');
    const rare = dice.pick(RARE_PLANTS);
    const origin = dice.pick(ORIGINS);
    const park = dice.pick(['국립공원', '도립공원', '군립공원']);
    const fortress = names.fresh('산성');
    const parkYear = dice.int(1967, 2016);
    const era = dice.pick(['삼국 시대', '고려 시대', '조선 시대']);
    const facts = [
      {
        key: 'height',
        required: true,
        sentence: `${josa(name, '은')} ${josa(a.name, '과')} ${b.name}의 경계에 솟은 산으로, 높이는 ${dice.int(400, 1900)}미터이다.`,
        questions: [`${name}의 해발 고도는 얼마인가?`, `${josa(name, '은')} 몇 미터야?`],
      },
      {
        key: 'rock',
        sentence: `산 전체가 ${josa(rock, '으로')} 이루어져 ${look}.`,
        questions: [`${josa(name, '은')} 어떤 암석으로 되어 있나?`],
      },
      {
        key: 'peak',
        sentence: `가장 높은 봉우리인 ${peak}에 오르면 ${dice.pick(['맑은 날에는 멀리 바다까지 내려다보인다', '주변 산줄기가 한눈에 들어온다'])}.`,
        questions: [`${name}의 최고봉 이름은?`],
      },
      {
        key: 'falls',
        sentence: `계곡에는 높이 ${dice.int(8, 60)}미터의 ${josa(falls, '이')} 있어 여름철 피서지로 인기가 많다.`,
        questions: [`${josa(falls, '이')} 있는 산은 어디인가?`],
      },
      {
        key: 'temple',
        sentence: `남쪽 기슭의 ${josa(temple, '은')} ${dice.int(600, 1400)}년 ${names.fresh()} 스님이 세웠다고 전한다.`,
        questions: [`${josa(temple, '은')} 어느 산에 자리하고 있나요?`],
      },
      {
        key: 'plants',
        sentence: `봄이면 ${josa(dice.pick(['철쭉', '진달래']), '이')} 능선을 붉게 물들이고, 정상 부근에는 희귀 식물인 ${josa(rare, '이')} 자란다.`,
        questions: [`${name} 꼭대기 근처에서 자라는 드문 식물은?`],
      },
      {
        key: 'park',
        sentence: `${parkYear}년 ${josa(park, '으로')} 지정되었으며, 정상까지 ${dice.int(2, 6)}시간쯤 걸리는 등산로가 ${dice.int(3, 9)}개 있다.`,
        questions: [`${josa(name, '이')} 공원으로 지정된 것은 언제인가?`],
      },
      {
        key: 'origin',
        sentence: `산 이름은 ${origin}에서 유래하였다.`,
        questions: [`${name}이라는 이름은 어디서 비롯되었나?`],
      },
      {
        key: 'fortress',
        sentence: `${era}에 쌓은 ${josa(fortress, '은')} 이 일대를 지키는 요충지였으며, 지금도 성벽 ${dice.int(2, 9)}00미터가량이 남아 있다.`,
        questions: [`${fortress}의 성벽이 남아 있는 산은?`],
      },
      {
        key: 'snow',
        sentence: `정상 부근은 일 년 내내 바람이 세고, 겨울에 내린 눈이 ${dice.int(3, 5)}월까지 녹지 않는다.`,
        questions: [`${name} 꼭대기의 눈은 언제까지 남아 있나?`],
      },
      {
        key: 'shelter',
        sentence: `정상 아래 ${names.fresh(' 대피소')}에서는 등산객이 하룻밤 묵어 갈 수 있고, 숲에는 멧돼지와 고라니, 하늘다람쥐가 산다.`,
      },
      {
        key: 'riddle',
        sentence: '',
        needs: ['park'],
        questions: [`${parkYear}년에 ${josa(park, '으로')} 지정된 산은 어디인가?`],
      },
    ];
    const { text, question, asks } = compose(dice, facts, i);
    items.push({ id: `mountain-${i}`, topic: 'mountain', title: name, text, question, asks });
    made.push(name);
  }
  return { items, mountains: made };
}
