import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_PAGE, configurationPage } from '../../scripts/config-doc.ts';
import { configSchema } from '../../src/config.ts';

describe('docs/configuration.md', () => {
  it('is what the configuration schema says (run `node scripts/config-doc.ts` after a change)', () => {
    expect(readFileSync(CONFIGURATION_PAGE, 'utf8')).toBe(configurationPage());
  });

  it('has a row for every setting, with what it accepts in the schema’s own words', () => {
    const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
    for (const name of Object.keys(configSchema.shape)) {
      expect(page, name).toMatch(
        new RegExp(`^\\| \`${name}\` \\| [^|]+ \\| [^|]+ \\| .+ \\|$`, 'm'),
      );
    }
    // A refused value is named in words a person can act on, never a parser's internals.
    expect(page).not.toMatch(/Invalid input|expected number|NaN/);
  });
});
