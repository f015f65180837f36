/**
 * How long cutting one long answer into Telegram parts takes (src/telegram/split-message.ts),
 * which a streaming Telegram answer does on the whole text at every update: a 4 MB answer of
 * spaces (the case that held the event loop) and 4 MB of ordinary paragraphs. With another
 * checkout's root, its splitMessage is timed too, alternating, on the same texts.
 *
 *   node bench/telegram-split.ts [other checkout, e.g. a worktree of an older commit] [rounds=10]
 */

import { load, machineReport } from './support/machine.ts';
import { line, summarize } from './support/stats.ts';

type Split = (text: string) => string[];
const [other, roundsArg] = process.argv.slice(2);
const ROUNDS = Number(roundsArg ?? 10);

const splitterOf = async (root: URL): Promise<Split> =>
  ((await import(new URL('src/telegram/split-message.ts', root).href)) as { splitMessage: Split })
    .splitMessage;
const splitters: [string, Split][] = [
  ['this checkout', await splitterOf(new URL('../', import.meta.url))],
];
if (other)
  splitters.push([other, await splitterOf(new URL(`file://${other.replace(/\/?$/, '/')}`))]);

const paragraph = 'The copper kettle by the window has been there since the winter. It whistles. ';
const texts: [string, string][] = [
  ['4 MB of spaces', `Start.${' '.repeat(4_000_000)}End.`],
  ['4 MB of paragraphs', `${paragraph.repeat(12).trim()}\n\n`.repeat(4_200)],
];

console.log(`# Telegram split of a long answer\n\n${machineReport()}\nload: ${load()}\n`);
for (const [textName, text] of texts) {
  const times = new Map<string, number[]>(splitters.map(([name]) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, split] of round % 2 ? [...splitters].reverse() : splitters) {
      const started = performance.now();
      split(text);
      times.get(name)?.push(performance.now() - started);
    }
  }
  for (const [name, values] of times)
    console.log(`${textName}, ${name}: ${line(summarize(values))}`);
}
