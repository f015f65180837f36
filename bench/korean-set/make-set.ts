/**
 * Writes the synthetic Korean encyclopedia set (bench/korean-set/encyclopedia.jsonl): one
 * paragraph per entity (cities, mountains, dishes, people, companies, animals, heritage),
 * written from sentence templates with facts drawn by a seeded generator, and one question
 * per paragraph about one of its facts, in other words than the paragraph uses (another
 * particle, a synonym, or the fact instead of the name). Names are made up, and so are the
 * facts; entities refer to each other (a person's birthplace is one of the cities, an animal
 * lives on one of the mountains), so a name also appears in paragraphs about other things.
 *
 *   node bench/korean-set/make-set.ts
 */
import { writeFileSync } from 'node:fs';
import { dishes } from './dishes.ts';
import { Dice, Names } from './korean.ts';
import { animals, heritage } from './nature.ts';
import { companies, people } from './people.ts';
import { cities, mountains } from './places.ts';

const dice = new Dice(20);
const names = new Names(dice);
const placed = cities(dice, names, 90);
const peaks = mountains(dice, names, placed.cities, 60);
const items = [
  ...placed.items,
  ...peaks.items,
  ...dishes(dice, names, placed.cities, 40),
  ...people(dice, names, placed.cities, 90).items,
  ...companies(dice, names, placed.cities, 60),
  ...animals(dice, names, peaks.mountains, 60),
  ...heritage(dice, names, placed.cities, 60),
];
const file = new URL('encyclopedia.jsonl', import.meta.url);
writeFileSync(file, `${items.map((item) => JSON.stringify(item)).join('\n')}\n`);
const lengths = items.map((item) => item.text.length).sort((a, b) => a - b);
console.log(
  `${items.length} paragraphs, ${lengths[0]}–${lengths.at(-1)} characters (median ${lengths[lengths.length >> 1]})`,
);
