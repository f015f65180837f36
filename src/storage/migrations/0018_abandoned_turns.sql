-- A resumable run keeps its question and place (`turn`, JSON text) until it ends: if its
-- holder dies, whoever ends the run stores the question and the answer as far as it got as an
-- interrupted turn. The index on `ended_at` was never used (pruning reads
-- coalesce(ended_at, heartbeat_at)).
DROP INDEX "run_streams_ended_idx";--> statement-breakpoint
ALTER TABLE "run_streams" ADD COLUMN "turn" text;
