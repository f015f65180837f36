import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as internal from 'ai/internal';
import { describe, expect, it } from 'vitest';

/**
 * Parley's tool loop (src/assistant/tool-loop.ts) and the chat service take functions from
 * `ai/internal`, the entry point the AI SDK's packages use between themselves, which it does
 * not promise to keep from one release to the next. So package.json pins `ai` and the
 * `@ai-sdk/*` packages to exact versions, and an upgrade is checked by:
 * - this test: each name Parley imports from `ai/internal` is still there, and the installed
 *   SDK is the pinned one;
 * - `tsc --noEmit`: their signatures;
 * - test/http/recorded-streams.test.ts: what the loop does with them (the answer, the tool
 *   messages sent back, the next chat's history, for every recorded provider stream).
 */
const root = join(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const sdkPackages = Object.keys(pkg.dependencies).filter(
  (name) => name === 'ai' || name.startsWith('@ai-sdk/'),
);

/** Every value (not type) Parley's source imports from `ai/internal`, with the file. */
function internalImports(): { name: string; file: string }[] {
  const found: { name: string; file: string }[] = [];
  const files = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' });
  for (const file of files.filter((name) => name.endsWith('.ts'))) {
    const source = readFileSync(join(root, 'src', file), 'utf8');
    for (const match of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'ai\/internal'/g)) {
      for (const specifier of (match[1] as string).split(',')) {
        const name = specifier.trim().split(/\s+as\s+/)[0] as string;
        if (name && !name.startsWith('type ')) {
          found.push({ name, file: relative(root, join(root, 'src', file)) });
        }
      }
    }
  }
  return found;
}

describe('the AI SDK internals the tool loop uses', () => {
  it('are pinned: ai and @ai-sdk/* have exact versions in package.json, and those are installed', () => {
    expect(sdkPackages).toContain('ai');
    for (const name of sdkPackages) {
      const wanted = pkg.dependencies[name] as string;
      expect(
        wanted,
        `package.json must pin ${name} to an exact version (the tool loop uses ai/internal, ` +
          'which may change in any release), not the range',
      ).toMatch(/^\d+\.\d+\.\d+$/);
      const installed = (
        JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version;
      expect(installed, `${name} installed is not the version package.json pins: run npm ci`).toBe(
        wanted,
      );
    }
  });

  it('are still exported by ai/internal', () => {
    const used = internalImports();
    // tool-loop.ts alone takes ten; an empty list would mean the scan above is broken.
    expect(used.length).toBeGreaterThanOrEqual(10);
    const exported = internal as Record<string, unknown>;
    for (const { name, file } of used) {
      expect(
        typeof exported[name],
        `ai@${pkg.dependencies.ai} no longer exports '${name}' from ai/internal (${file} uses it). ` +
          'The SDK does not keep ai/internal stable: find what replaced it in the release, adapt ' +
          `${file}, then run test/http/recorded-streams.test.ts, which checks the loop's behaviour`,
      ).toBe('function');
    }
  });
});
