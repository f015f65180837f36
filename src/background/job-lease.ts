import type { JobPolicy } from './job-kind.ts';

/**
 * A kind's policy with the operator's lease (JOB_LEASE_SECONDS) when one is set. A job may
 * take at most half its lease, so a row claimed for the lease (a notice) is never taken over
 * while its sender still works on it (the budget also aborts the job's signal); and a kind
 * swept on an interval looks at least once a lease, so a claim a dead process left is
 * queued again soon after it runs out.
 */
export function withLease<P extends JobPolicy>(policy: P, leaseSeconds: number | undefined): P {
  if (leaseSeconds === undefined) return policy;
  const budgetMs = Math.min(policy.budgetMs, (leaseSeconds * 1000) / 2);
  const { intervalMs } = policy;
  return {
    ...policy,
    leaseSeconds,
    budgetMs,
    ...(intervalMs === undefined ? {} : { intervalMs: Math.min(intervalMs, leaseSeconds * 1000) }),
  };
}
