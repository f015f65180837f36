-- Resumable runs' events, one row per run per flush instead of one per event: per token the
-- database paid a row, a key entry and a foreign-key check, +28-47 % of the embedded engine's
-- CPU per token (bench/RESULTS.md, issue 32). Logs are kept for RUN_EVENTS_KEEP_HOURS only, so
-- the old rows are not carried over: a run resumed across this upgrade ends as interrupted.
CREATE TABLE "run_event_batches" (
	"run_id" uuid NOT NULL,
	"first_seq" integer NOT NULL,
	"last_seq" integer NOT NULL,
	"events" text NOT NULL,
	CONSTRAINT "run_event_batches_run_id_first_seq_pk" PRIMARY KEY("run_id","first_seq")
);
--> statement-breakpoint
DROP TABLE "run_events" CASCADE;--> statement-breakpoint
ALTER TABLE "run_event_batches" ADD CONSTRAINT "run_event_batches_run_id_run_streams_run_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."run_streams"("run_id") ON DELETE cascade ON UPDATE no action;
