import { expect } from 'vitest';
import type { RunningParley } from './start-parley.ts';

/** A job given up for good, as GET /admin/jobs?state=failed lists it. */
export interface FailedJob {
  kind: string;
  id: string;
  user_id: string;
  attempts: number;
  error_kind: string | null;
  failed_at: string;
}

/** The failed jobs as the administrator sees them, and the answer's text (to search it). */
export async function failedJobs(
  parley: RunningParley,
  query = '',
): Promise<{ text: string; jobs: FailedJob[] }> {
  const response = await parley.fetch(`/admin/jobs?state=failed${query}`);
  expect(response.status).toBe(200);
  const text = await response.text();
  return { text, jobs: (JSON.parse(text) as { jobs: FailedJob[] }).jobs };
}
