import type { JobPolicy } from './job-kind.ts';

/**
 * A kind's policy with the operator's lease (JOB_LEASE_SECONDS) when one is set. A job may
 * take at most half its lease, so a live process never loses a claim it is still working on
 * (the budget also aborts the job's signal); and a kind drained on an interval looks at least
 * once a lease, so a claim a dead process left is taken over soon after it runs out.
 */
export function withLease<P extends JobPolicy>(policy: P, leaseSeconds: number | undefined): P {
  if (leaseSeconds === undefined) return policy;
  const leaseMs = leaseSeconds * 1000;
  const budgetMs = Math.min(policy.budgetMs, leaseMs / 2);
  const { intervalMs } = policy;
  return {
    ...policy,
    leaseMs,
    budgetMs,
    ...(intervalMs === undefined ? {} : { intervalMs: Math.min(intervalMs, leaseMs) }),
  };
}
