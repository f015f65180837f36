DROP INDEX "automation_runs_occurrence_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "automation_runs_kind_occurrence_idx" ON "automation_runs" USING btree ("automation_id","manual","occurrence");