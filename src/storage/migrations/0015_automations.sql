CREATE TABLE "automations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"prompt" text NOT NULL,
	"schedule" jsonb NOT NULL,
	"timezone" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"paused_reason" text,
	"next_run_at" timestamp with time zone,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"conversation_id" uuid,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "automations_conversation_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE SET NULL
);
--> statement-breakpoint
CREATE INDEX "automations_user_id_idx" ON "automations" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "automations_due_idx" ON "automations" USING btree ("next_run_at") WHERE "status" = 'active';--> statement-breakpoint
CREATE TABLE "automation_runs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"automation_id" uuid NOT NULL,
	"occurrence" timestamp with time zone NOT NULL,
	"manual" boolean DEFAULT false NOT NULL,
	"status" text NOT NULL,
	"claimed_until" timestamp with time zone,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"chat_run_id" uuid,
	"error" text,
	"delivered_to" text,
	"read_at" timestamp with time zone,
	CONSTRAINT "automation_runs_automation_id_fk" FOREIGN KEY ("automation_id") REFERENCES "automations"("id") ON DELETE CASCADE
);
--> statement-breakpoint
-- The claim: one run per automation and occurrence, whichever replica or restart asks.
CREATE UNIQUE INDEX "automation_runs_occurrence_idx" ON "automation_runs" USING btree ("automation_id","occurrence");--> statement-breakpoint
CREATE INDEX "automation_runs_open_idx" ON "automation_runs" USING btree ("status") WHERE "status" IN ('queued', 'running');
