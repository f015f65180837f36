import type { JobPolicy } from './job-kind.ts';

/**
 * A kind's policy with the operator's lease (JOB_LEASE_SECONDS) when one is set. A job may
 * take at most half its lease, so a live process never loses a claim it is still working on
 * (the budget also aborts the job's signal).
 */
export function withLease<P extends Omit<JobPolicy, 'intervalMs'>>(
  policy: P,
  leaseSeconds: number | undefined,
): P {
  if (leaseSeconds === undefined) return policy;
  const leaseMs = leaseSeconds * 1000;
  return { ...policy, leaseMs, budgetMs: Math.min(policy.budgetMs, leaseMs / 2) };
}
