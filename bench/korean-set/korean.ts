/** Helpers for writing the synthetic Korean set: a seeded random source, particles, names. */

import { seededRandom as seeded } from '../../test/support/seeded-random.ts';

export { seeded };

export class Dice {
  readonly #next: () => number;
  constructor(seed: number) {
    this.#next = seeded(seed);
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.#next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#next() * items.length)] as T;
  }
  /** `count` different items. */
  some<T>(items: readonly T[], count: number): T[] {
    const pool = [...items];
    const chosen: T[] = [];
    while (chosen.length < count && pool.length > 0) {
      chosen.push(pool.splice(Math.floor(this.#next() * pool.length), 1)[0] as T);
    }
    return chosen;
  }
  chance(p: number): boolean {
    return this.#next() < p;
  }
}

/** The final consonant (jongseong index, 0 = none) of a word's last Hangul syllable. */
function final(word: string): number {
  const code = word.charCodeAt(word.length - 1);
  if (code < 0xac00 || code > 0xd7a3) return 0;
  return (code - 0xac00) % 28;
}

/** A word with the particle its last syllable takes: `josa('서울', '은')` → `서울은`. */
export function josa(
  word: string,
  particle: '은' | '이' | '을' | '과' | '으로' | '이라' | '에',
): string {
  const closed = final(word) !== 0;
  switch (particle) {
    case '은':
      return word + (closed ? '은' : '는');
    case '이':
      return word + (closed ? '이' : '가');
    case '을':
      return word + (closed ? '을' : '를');
    case '과':
      return word + (closed ? '과' : '와');
    case '으로': // ㄹ (index 8) takes 로 like an open syllable
      return word + (closed && final(word) !== 8 ? '으로' : '로');
    case '이라':
      return word + (closed ? '이라' : '라');
    case '에':
      return `${word}에`;
  }
}

/** The particle alone, for a word followed by brackets: `《책》은`. */
export const particle = (word: string, kind: Parameters<typeof josa>[1]) =>
  josa(word, kind).slice(word.length);

const SYLLABLES = (
  '가 나 다 마 보 서 송 안 양 연 영 오 율 은 인 장 정 주 지 진 창 천 청 태 평 하 한 해 현 화 ' +
  '홍 금 남 노 단 담 대 덕 도 동 두 려 명 무 문 미 백 봉 부 비 사 상 석 선 설 성 소 수 순 신 ' +
  '아 여 예 옥 온 용 우 운 원 월 유 윤 이 임 재 전 제 조 중 차 초 추 춘 충 탄 파 포 풍 학 함 ' +
  '항 호 효 계 고 곡 광 구 군 기 길 난 농 능 달 락 란 령 로 록 류 륜 리 림 만 매 목 묵 민 반'
).split(' ');

/** Two-syllable stems never handed out twice, so every entity's name is its own. */
export class Names {
  readonly #used = new Set<string>();
  readonly #dice: Dice;
  constructor(dice: Dice) {
    this.#dice = dice;
  }
  /** A fresh stem (two syllables) followed by `suffix`. */
  fresh(suffix = ''): string {
    for (;;) {
      const stem = this.#dice.pick(SYLLABLES) + this.#dice.pick(SYLLABLES);
      if (this.#used.has(stem)) continue;
      this.#used.add(stem);
      return stem + suffix;
    }
  }
  /** A person's name: a surname and a fresh given name. */
  person(): string {
    return this.#dice.pick(SURNAMES) + this.fresh();
  }
}

const SURNAMES =
  '김 이 박 최 정 강 조 윤 장 임 한 오 서 신 권 황 안 송 류 홍 전 고 문 양 손 배 백 허 남 심'.split(
    ' ',
  );

/** One paragraph of the set and the question written against it. */
export interface Item {
  id: string;
  topic: string;
  title: string;
  text: string;
  question: string;
  /** Which fact the question asks about. */
  asks: string;
}

/** A fact sentence and the questions (paraphrased) that ask about it. */
export interface Fact {
  key: string;
  /** Empty for a question that combines other facts (`needs`) without naming the entity. */
  sentence: string;
  /** Required facts are always written; the others are left out at random. */
  required?: boolean;
  questions?: string[];
  /** Facts the question needs in the paragraph. */
  needs?: string[];
}

/**
 * A paragraph from facts in order, and one question. Every third question (by `turn`) is
 * the `riddle`, which describes the entity by facts instead of naming it; the others ask
 * about one fact, taken in turn. Optional facts are dropped at random (never one the
 * question needs) while the paragraph is longer than `maxChars`.
 */
export function compose(
  dice: Dice,
  facts: readonly Fact[],
  turn: number,
  maxChars = 700,
): { text: string; question: string; asks: string } {
  const riddle = facts.find((fact) => fact.key === 'riddle');
  const askable = facts.filter((fact) => fact.questions?.length && fact !== riddle);
  const asked = riddle && turn % 3 === 0 ? riddle : (askable[turn % askable.length] as Fact);
  const needed = (fact: Fact) =>
    fact === asked || fact.required === true || (asked.needs ?? []).includes(fact.key);
  let kept = facts.filter((fact) => fact.sentence && (needed(fact) || dice.chance(0.9)));
  const text = () => kept.map((fact) => fact.sentence).join(' ');
  while (text().length > maxChars) {
    const optional = kept.filter((fact) => !needed(fact));
    if (optional.length === 0) break;
    kept = kept.filter((fact) => fact !== dice.pick(optional));
  }
  return { text: text(), question: dice.pick(asked.questions ?? []), asks: asked.key };
}
