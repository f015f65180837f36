import type { JobPolicy } from './job-kind.ts';

/**
 * A kind's policy with the operator's lease (JOB_LEASE_SECONDS) when one is set. A job whose
 * row is its claim (a notice) may take at most half the lease, so the row is never taken over
 * while its sender still works on it (the budget also aborts the job's signal); the others
 * are held by a heartbeat for as long as they run. A kind swept on an interval looks at least
 * once a lease, so a claim a dead process left is queued again soon after it runs out.
 */
export function withLease<P extends JobPolicy>(policy: P, leaseSeconds: number | undefined): P {
  if (leaseSeconds === undefined) return policy;
  const budgetMs = policy.rowIsClaim
    ? Math.min(policy.budgetMs, (leaseSeconds * 1000) / 2)
    : policy.budgetMs;
  const { intervalMs } = policy;
  return {
    ...policy,
    leaseSeconds,
    budgetMs,
    ...(intervalMs === undefined ? {} : { intervalMs: Math.min(intervalMs, leaseSeconds * 1000) }),
  };
}
