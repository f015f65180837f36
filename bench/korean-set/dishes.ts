/** Local dishes of the synthetic Korean set. */
import { compose, type Dice, type Item, josa, type Names } from './korean.ts';
import type { City } from './places.ts';

const DISHES: [string, string, string[]][] = [
  ['메밀묵', '메밀가루를 쑤어 굳힌 묵', ['메밀', '김가루']],
  ['국밥', '뜨거운 국물에 밥을 말아 먹는 음식', ['소뼈', '선지']],
  ['냉면', '차가운 육수에 면을 말아 먹는 국수', ['메밀면', '동치미 국물']],
  ['한과', '곡식 가루를 반죽해 튀긴 뒤 조청을 바른 과자', ['찹쌀', '조청']],
  ['젓갈', '해산물을 소금에 절여 삭힌 저장 음식', ['새우', '천일염']],
  ['막걸리', '쌀을 누룩으로 빚은 탁한 술', ['쌀', '누룩']],
  ['떡갈비', '다진 고기를 갈비뼈에 붙여 구운 음식', ['소갈비', '배즙']],
  ['추어탕', '미꾸라지를 갈아 끓인 국', ['미꾸라지', '시래기']],
];
const DISH_ORIGINS = [
  '조선 후기 장터의 상인들이 끼니를 빨리 해결하려고 먹던 데',
  '흉년에 구황 음식으로 먹던 데',
  '궁중에 진상하던 음식이 민가로 퍼진 데',
  '뱃사람들이 고기잡이에서 돌아와 먹던 데',
];

export function dishes(dice: Dice, names: Names, places: readonly City[], count: number): Item[] {
  const items: Item[] = [];
  const regions = dice.some(places, count);
  regions.forEach((region, i) => {
    const [base, description, [i1, i2]] = dice.pick(DISHES) as [string, string, [string, string]];
    const name = `${region.stem} ${base}`;
    const season = dice.pick(['여름', '겨울', '봄', '가을']);
    const book = names.fresh(dice.pick(['방', '요록', '전서']));
    const facts = [
      {
        key: 'intro',
        required: true,
        sentence: `${josa(name, '은')} ${region.province} ${region.name}의 향토 음식으로, ${description}이다.`,
      },
      {
        key: 'ingredients',
        sentence: `${josa(i1, '과')} ${josa(i2, '을')} 주재료로 하며 ${dice.pick(['집간장', '된장', '소금', '고추장'])}으로 간을 맞춘다.`,
        questions: [`${name}에는 어떤 재료가 들어가나?`, `${name}의 주된 재료는 뭐야?`],
      },
      {
        key: 'origin',
        sentence: `${dice.pick(DISH_ORIGINS)}에서 비롯되었다고 전한다.`,
        questions: [`${josa(name, '은')} 어떻게 생겨난 음식인가?`],
      },
      {
        key: 'season',
        sentence: `주로 ${season}에 먹으며, ${josa(dice.pick(['깍두기', '파김치', '묵은지', '동치미']), '을')} 곁들여 낸다.`,
        questions: [
          `${josa(name, '은')} 어느 계절에 즐겨 먹나요?`,
          `${josa(name, '과')} 함께 내는 반찬은?`,
        ],
      },
      {
        key: 'street',
        sentence: `${dice.int(1995, 2020)}년부터 해마다 음식 축제가 열리고, 읍내에는 전문 식당 ${dice.int(8, 40)}곳이 모여 골목을 이루고 있다.`,
        questions: [`${name} 전문점이 몇 곳이나 모여 있지?`],
      },
      {
        key: 'record',
        sentence: `${dice.int(1670, 1890)}년에 쓰인 요리책 《${book}》에 만드는 법이 처음 기록되어 있다.`,
        questions: [`${name} 조리법이 처음 실린 옛 문헌은?`],
      },
      {
        key: 'health',
        sentence: `${dice.pick(['단백질이 풍부하고 소화가 잘되어', '열량이 낮고 식이 섬유가 많아', '기름기가 적고 맛이 담백해'])} 보양식으로도 여겨진다.`,
      },
      {
        key: 'craft',
        sentence: `만드는 데 손이 많이 가서 예전에는 혼례나 회갑 같은 잔칫날에만 상에 올랐으나, ${dice.int(196, 199)}0년대 이후 누구나 즐기는 음식이 되었다.`,
        questions: [`${josa(name, '은')} 예전에 언제 먹던 음식이었나?`],
      },
      {
        key: 'riddle',
        sentence: '',
        needs: ['ingredients', 'season'],
        questions: [
          `${region.province}에서 ${season}에 즐겨 먹는, ${josa(i1, '으로')} 만든 향토 음식은?`,
        ],
      },
    ];
    const { text, question, asks } = compose(dice, facts, i);
    items.push({ id: `dish-${i}`, topic: 'dish', title: name, text, question, asks });
  });
  return items;
}
