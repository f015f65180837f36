#!/usr/bin/env bash
# Runs every benchmark twice (all of them once, then all again) and keeps each output in
# bench/results/, then the extra runs RESULTS.md cites. About an hour on the 2-core machine;
# memory-users is most of it.
#   nohup bash bench/run-all.sh > /tmp/bench.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results
mkdir -p "$out"
for run in 1 2; do
  node bench/startup.ts 5 > "$out/startup-run$run.md"
  node bench/import-cost.ts > "$out/import-cost-run$run.md"
  for engine in embedded server; do
    node bench/chat-overhead.ts 30 "$engine" > "$out/chat-overhead-$engine-run$run.md"
    node bench/event-loop-delay.ts "$engine" > "$out/event-loop-delay-$engine-run$run.md"
    node bench/reset-returning.ts "$engine" > "$out/reset-returning-$engine-run$run.md"
    node bench/chat-concurrency.ts "$engine" 1000 > "$out/chat-concurrency-$engine-run$run.md"
  done
done
for run in 1 2; do
  node bench/memory-users.ts 100000 50 > "$out/memory-users-run$run.md"
done

# Extra runs cited in RESULTS.md.
for run in 1 2; do
  # Time to first byte of a 3-token answer: Parley's fixed cost without the 1,000-token burst.
  node bench/chat-overhead.ts 30 embedded 3 > "$out/chat-overhead-3-tokens-embedded-run$run.md"
done
# Is the pool the limit at 1,000 streams? Default DB_POOL_MAX (10) and 50, back to back.
for run in 1 2; do
  node bench/chat-concurrency.ts server 1000 > "$out/chat-concurrency-server-ab-pool10-run$run.md"
  DB_POOL_MAX=50 node bench/chat-concurrency.ts server 1000 > "$out/chat-concurrency-server-ab-pool50-run$run.md"
done
# Where the server's main thread spends its time at 1,000 streams.
rm -rf /tmp/parley-bench-prof
BENCH_SERVER_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/parley-bench-prof' \
  node bench/chat-concurrency.ts server 1000 > "$out/chat-concurrency-server-profiled.md"
node bench/support/profile-summary.ts /tmp/parley-bench-prof/*.cpuprofile 40 3000 \
  > "$out/chat-concurrency-server-profile.txt"
# The same users on the server engine, for what PGlite adds to resident memory (20k users).
node bench/memory-users.ts 20000 50 server > "$out/memory-users-server-20k.md"
echo "all benchmarks done"
