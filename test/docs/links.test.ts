import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchorsOf(path: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of withoutCode(readFileSync(path, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Links inside code are examples, not links. */
const withoutCode = (text: string) => text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');

describe('links between the README and docs/', () => {
  it.each(PAGES)('every link of %s leads to a file and heading that exist', (page) => {
    const path = join(ROOT, page);
    const broken: string[] = [];
    for (const match of withoutCode(readFileSync(path, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] as string;
      if (/^[a-z]+:/.test(target)) continue; // http(s), mailto: outside the repository
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved = file ? join(dirname(path), decodeURIComponent(file)) : path;
      if (!existsSync(resolved)) {
        broken.push(`${target}: no file ${relative(ROOT, resolved)}`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
        broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, resolved)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('reaches every page of docs/ from the README', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const unlinked = PAGES.filter(
      (page) => page.startsWith('docs/') && !readme.includes(`](${page}`),
    );
    expect(unlinked).toEqual([]);
  });
});
