/**
 * Writes docs/configuration.md from the configuration schema (src/config.ts) and the words of
 * src/config-docs.ts: every setting, its default, what it accepts and what it does. The
 * default is what parsing an empty environment gives; what a setting accepts is the schema's
 * own message for a value it refuses. test/docs/configuration-page.test.ts fails when the page
 * on disk is not what this writes.
 *
 *   node scripts/config-doc.ts          (writes the page)
 */
import { writeFileSync } from 'node:fs';
import { configSchema, parseConfig } from '../src/config.ts';
import { SETTING_DOCS } from '../src/config-docs.ts';

export const CONFIGURATION_PAGE = new URL('../docs/configuration.md', import.meta.url);

/** A value no setting accepts but a free text: control characters and no scheme or number. */
const REFUSED = '\u0007?';

export function configurationPage(): string {
  const defaults = parseConfig({}) as Record<string, unknown>;
  const rows = Object.keys(configSchema.shape).map((name) => {
    const doc = SETTING_DOCS[name as keyof typeof SETTING_DOCS];
    const value = defaults[name];
    const shownDefault = value === undefined ? (doc.unset ?? 'unset') : `\`${formatValue(value)}\``;
    return `| \`${name}\` | ${shownDefault} | ${accepts(name)} | ${doc.doc} |`;
  });
  return [
    '# Configuration',
    '',
    '<!-- Written by `node scripts/config-doc.ts` from src/config.ts and src/config-docs.ts: edit',
    'those, then run it; test/docs/configuration-page.test.ts fails when this page is stale. -->',
    '',
    'Parley reads every setting once at start from the environment, or from a `.env` file in the',
    'working directory (or the file named by `ENV_FILE`, which must exist: a missing one stops',
    'start-up, since its `API_TOKEN` would be missing too); the environment wins. Booleans accept',
    '`true/false/1/0/yes/no` (any case). A bad value stops start-up with a message naming the',
    'setting and what it accepts, as in the third column (never the value of a token, key, secret',
    'or a URL with a password). So does a port in use, a `DATA_DIR` that cannot be used, or a',
    'database server that cannot be reached or refuses `DATABASE_URL`: one line, no stack trace.',
    '',
    '| Setting | Default | Accepts | What it does |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}

function formatValue(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  return String(value);
}

/** The schema's own words for what a setting accepts: its message for a refused value. */
function accepts(name: string): string {
  const result = configSchema.safeParse({ [name]: REFUSED });
  const issue = result.success ? undefined : result.error.issues.find((i) => i.path[0] === name);
  if (!issue) return 'any text';
  return issue.message
    .replace(`${JSON.stringify(REFUSED)} is not `, '')
    .replace(/^accepts /, '')
    .replace(/\|/g, '\\|');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(CONFIGURATION_PAGE, configurationPage());
  console.log(`wrote ${CONFIGURATION_PAGE.pathname}`);
}
