/** Order statistics over a list of numbers (milliseconds, bytes…). */
export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] as number;
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((total, value) => total + value, 0);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? (sorted[sorted.length - 1] as number) : Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
  };
}

/** `12.3` for milliseconds. */
export const ms = (value: number): string => (Number.isFinite(value) ? value.toFixed(1) : '–');

export const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);

/** `p50 1.2 / p99 3.4 / max 5.6 ms (n=…)` */
export function line(summary: Summary, unit = 'ms'): string {
  return `p50 ${ms(summary.p50)} / p99 ${ms(summary.p99)} / max ${ms(summary.max)} ${unit} (n=${summary.n})`;
}

export const sleep = (delayMs: number) => new Promise((resolve) => setTimeout(resolve, delayMs));

/**
 * A seeded generator of numbers in [0, 1) (mulberry32, the Korean set's), so runs on both
 * engines get the same data. (An LCG computed in doubles, `(seed * 1103515245 + 12345) % 2 ** 31`,
 * loses precision and cycles after 15,824 draws: the 100,000 "different" chunks of
 * search-latency.ts were ~2,200 texts repeated.)
 */
export { seeded as seededRandom } from '../korean-set/korean.ts';
