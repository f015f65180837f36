/** Historical figures and companies of the synthetic Korean set. */
import { compose, type Dice, type Fact, type Item, josa, type Names, particle } from './korean.ts';
import type { City } from './places.ts';

interface Role {
  role: string;
  gift: string;
  career: (dice: Dice) => string;
  work: string;
  workNote: string;
  verb: string;
}

const OFFICES = [
  '홍문관 교리',
  '사헌부 지평',
  '이조 참판',
  '예조 판서',
  '승정원 승지',
  '성균관 대사성',
];
const ROLES: Role[] = [
  {
    role: '학자',
    gift: '글재주가 뛰어나 이웃 고을까지 이름이 알려졌다',
    career: (d) =>
      `${d.int(19, 35)}세에 과거에 급제한 뒤 ${josa(d.pick(OFFICES), '과')} ${josa(d.pick(OFFICES), '을')} 지냈다.`,
    work: '저서',
    workNote: '성리학의 이론을 정리한 책으로 후대 학자들에게 큰 영향을 주었다',
    verb: '쓴',
  },
  {
    role: '화가',
    gift: '그림에 남다른 재능을 보였다',
    career: (d) =>
      `도화서에 들어가 화원으로 일하며 ${d.pick(['산수화', '인물화', '화조화'])}의 기법을 익혔다.`,
    work: '그림',
    workNote: '산골 마을의 사계절을 담은 작품으로 지금은 국립 박물관에 소장되어 있다',
    verb: '그린',
  },
  {
    role: '의원',
    gift: '약초의 이름과 쓰임을 두루 외웠다',
    career: (d) => `내의원 의관이 되어 ${d.int(10, 30)}년 동안 왕실의 병을 돌보았다.`,
    work: '의서',
    workNote: '백성들이 쉽게 구할 수 있는 약재로 병을 고치는 방법을 적은 책이다',
    verb: '지은',
  },
  {
    role: '장군',
    gift: '활쏘기와 말타기에 능했다',
    career: (d) =>
      `무과에 급제하여 ${d.pick(['수군절도사', '병마절도사', '부원수', '첨절제사'])}에 임명되었다.`,
    work: '일기',
    workNote: '전쟁터에서 날마다 겪은 일을 꼼꼼하게 적은 기록이다',
    verb: '남긴',
  },
  {
    role: '천문학자',
    gift: '밤하늘의 별을 관찰하기를 즐겼다',
    career: (d) => `관상감에 들어가 ${d.int(10, 30)}년 동안 해와 달의 움직임을 기록하였다.`,
    work: '천문서',
    workNote: '별자리의 위치를 정밀하게 기록한 책이다',
    verb: '펴낸',
  },
];
const WARS: [number, string][] = [
  [1361, '홍건적의 침입'],
  [1510, '삼포왜란'],
  [1592, '임진왜란'],
  [1627, '정묘호란'],
  [1636, '병자호란'],
  [1728, '이인좌의 난'],
  [1811, '홍경래의 난'],
];

export function people(
  dice: Dice,
  names: Names,
  places: readonly City[],
  count: number,
): { items: Item[]; people: string[] } {
  const items: Item[] = [];
  const made: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = names.person();
    const role = dice.pick(ROLES);
    const war = dice.pick(WARS);
    const born = war[0] - dice.int(22, 55);
    const died = war[0] + dice.int(3, 30);
    const era = born < 1392 ? '고려 말' : born < 1600 ? '조선 전기' : '조선 후기';
    const ho = names.fresh();
    const home = dice.pick(places);
    const title = names.fresh(dice.pick(['록', '집', '방', '도', '기']));
    const school = names.fresh(dice.pick(['서당', '정사']));
    const posthumous = names.fresh();
    const envoy = born < 1392 ? '원나라' : born < 1600 ? '명나라' : dice.pick(['청나라', '일본']);
    const student = names.person();
    const act =
      role.role === '장군'
        ? `군사를 이끌고 ${names.fresh('포')}에서 적을 크게 물리쳤다`
        : '고향에서 의병을 모아 싸웠다';
    const facts: Fact[] = [
      {
        key: 'intro',
        required: true,
        sentence: `${name}(${born}~${died})${particle(name, '은')} ${era}의 ${role.role}이다.`,
      },
      {
        key: 'ho',
        sentence: `호는 ${ho}이고, 본관은 ${names.fresh()}이다.`,
        questions: [`호가 ${ho}인 ${era} ${role.role}는 누구인가?`],
      },
      {
        key: 'birthplace',
        sentence: `${home.province} ${home.name}에서 태어났으며 어려서부터 ${role.gift}.`,
        questions: [`${name}의 고향은 어디인가요?`, `${josa(name, '은')} 어디 출신이야?`],
      },
      { key: 'career', sentence: role.career(dice) },
      {
        key: 'war',
        sentence: `${war[0]}년 ${josa(war[1], '이')} 일어나자 ${act}.`,
        questions: [
          `${war[1]} 때 ${role.role === '장군' ? '적을 무찌른' : '의병을 일으킨'} ${home.name} 출신 ${role.role}는?`,
        ],
      },
      {
        key: 'work',
        sentence: `그가 남긴 ${role.work} 《${title}》${particle(title, '은')} ${role.workNote}.`,
        questions: [`《${title}》${particle(title, '을')} ${role.verb} 사람은 누구인가?`],
      },
      {
        key: 'school',
        sentence: `말년에는 고향으로 돌아가 ${josa(school, '을')} 세우고 제자를 길렀다.`,
        questions: [`${josa(name, '이')} 늘그막에 세운 배움터의 이름은?`],
      },
      {
        key: 'envoy',
        sentence: `${born + dice.int(25, 40)}년에는 사신단을 따라 ${josa(envoy, '에')} 다녀와 그곳의 학문과 문물을 소개하였다.`,
        questions: [`${josa(name, '이')} 사신 일행으로 갔던 나라는?`],
      },
      {
        key: 'students',
        sentence: `제자로는 ${josa(student, '과')} ${names.person()} 등이 있다.`,
        questions: [`${student}의 스승은 누구인가?`],
      },
      {
        key: 'death',
        sentence:
          role.role === '학자' || role.role === '장군'
            ? `${died}년 ${died - born}세로 세상을 떠났으며, 나라에서 ${josa(posthumous, '이라')}는 시호를 내렸다.`
            : `${died}년 ${died - born}세로 세상을 떠났고, 그의 위패는 ${school}에 모셔져 있다.`,
        questions: [
          `${josa(name, '은')} 몇 년에 사망했나?`,
          `${josa(name, '이')} 숨진 해는 언제야?`,
        ],
      },
      {
        key: 'riddle',
        sentence: '',
        needs: ['birthplace'],
        questions: [`${home.name}에서 태어난 ${era} ${role.role}는 누구인가?`],
      },
    ];
    const { text, question, asks } = compose(dice, facts, i);
    items.push({ id: `person-${i}`, topic: 'person', title: name, text, question, asks });
    made.push(name);
  }
  return { items, people: made };
}

const SECTORS: [string, string[]][] = [
  ['제약', ['해열제', '소화제', '백신']],
  ['전자', ['전기밥솥', '세탁기', '휴대용 선풍기']],
  ['식품', ['즉석 라면', '간장', '냉동 만두']],
  ['중공업', ['선박 엔진', '굴착기', '풍력 발전기']],
  ['화학', ['합성수지', '페인트', '접착제']],
  ['섬유', ['등산복 원단', '기능성 속옷', '작업복']],
];
const COUNTRIES = ['베트남', '인도네시아', '멕시코', '폴란드', '인도', '태국', '헝가리', '미국'];

export function companies(
  dice: Dice,
  names: Names,
  places: readonly City[],
  count: number,
): Item[] {
  const items: Item[] = [];
  for (let i = 0; i < count; i++) {
    const [sector, products] = dice.pick(SECTORS);
    const name = names.fresh(sector === '식품' ? '식품' : dice.pick([sector, '산업']));
    const founder = names.person();
    const founded = dice.int(1920, 1990);
    const listed = founded + dice.int(8, 30);
    const product = dice.pick(products);
    const decade = Math.min(2010, Math.floor((founded + dice.int(5, 30)) / 10) * 10);
    const [c1, c2] = dice.some(COUNTRIES, 2) as [string, string];
    const hq = dice.pick(places);
    const brand = names.fresh();
    const ceo = founder.slice(0, 1) + names.fresh();
    const facts: Fact[] = [
      {
        key: 'hq',
        required: true,
        sentence: `${josa(name, '은')} ${hq.province} ${hq.name}에 본사를 둔 ${sector} 기업이다.`,
        questions: [`${name}의 본사는 어디에 있나?`, `${name} 본사가 위치한 도시는?`],
      },
      {
        key: 'founder',
        sentence: `${founded}년 ${josa(founder, '이')} ${dice.pick(['작은 정미소', '직원 다섯 명의 공장', '시장 골목의 가게'])}에서 시작하였다.`,
        questions: [`${josa(name, '을')} 세운 사람은 누구인가?`, `${name}의 창업자는?`],
      },
      {
        key: 'product',
        sentence: `${decade}년대에 ${josa(product, '을')} 자체 개발하면서 크게 성장하였다.`,
        questions: [`${decade}년대에 ${josa(product, '을')} 직접 만들어 성장한 ${sector} 회사는?`],
      },
      {
        key: 'listing',
        sentence: `${listed}년 유가증권시장에 상장되었다.`,
        questions: [
          `${josa(name, '은')} 언제 증시에 상장했나?`,
          `${name} 주식이 거래소에 처음 오른 해는?`,
        ],
      },
      {
        key: 'staff',
        sentence: `${dice.int(2015, 2023)}년 매출은 약 ${dice.int(3, 900)}0억 원이며, 임직원은 ${dice.int(2, 95)}00명가량이다.`,
        questions: [`${name}에서 일하는 직원은 몇 명이야?`],
      },
      {
        key: 'overseas',
        sentence: `${josa(c1, '과')} ${c2}에 생산 공장을 두고 ${dice.int(2, 9)}0여 개 나라에 수출한다.`,
        questions: [`${name}의 해외 공장은 어느 나라에 있나요?`],
      },
      {
        key: 'foundation',
        sentence: `창업주의 뜻에 따라 ${names.fresh()} 장학 재단을 세워 해마다 대학생 ${dice.int(2, 30)}0명에게 장학금을 준다.`,
        questions: [`${josa(name, '이')} 운영하는 장학 재단 이름은?`],
      },
      {
        key: 'crisis',
        sentence: `1998년 외환 위기 때 부도 직전까지 몰렸으나 ${dice.pick(['유통', '건설', '호텔', '물류'])} 부문을 팔아 위기를 넘겼다.`,
        questions: [`${josa(name, '은')} 외환 위기를 어떻게 견뎌 냈나?`],
      },
      {
        key: 'brand',
        sentence: `대표 상표인 '${brand}'${particle(brand, '은')} ${dice.int(1975, 2015)}년에 처음 선보였다.`,
        questions: [`'${brand}'${particle(brand, '이')} 어느 회사 상표야?`],
      },
      {
        key: 'ceo',
        sentence: `지금의 대표이사는 창업주의 ${dice.pick(['손자', '아들', '딸', '손녀'])}인 ${ceo}이다.`,
        questions: [`${name}의 현재 경영자는 누구인가?`],
      },
      {
        key: 'riddle',
        sentence: '',
        needs: ['overseas', 'product'],
        questions: [`${c1}에 공장을 두고 ${josa(product, '을')} 만들어 온 회사는?`],
      },
    ];
    const { text, question, asks } = compose(dice, facts, i);
    items.push({ id: `company-${i}`, topic: 'company', title: name, text, question, asks });
  }
  return items;
}
