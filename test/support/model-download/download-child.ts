/**
 * Runs Parley's model download in a process of its own, so a test can kill it half-way the
 * way a crash or a restart would: `node download-child.ts <uri> <dir>`. Logs go to stdout as
 * JSON lines.
 */
import pino from 'pino';
import { ensureModel } from '../../../src/models/model-download.ts';

const [uri, dir] = process.argv.slice(2);
if (!uri || !dir) throw new Error('usage: download-child.ts <uri> <dir>');
await ensureModel({ uri, dir, logger: pino({ level: 'info' }), stallTimeoutMs: 600_000 });
