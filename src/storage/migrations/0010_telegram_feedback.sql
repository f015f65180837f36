ALTER TABLE "feedback" ADD COLUMN "source" text DEFAULT 'api' NOT NULL;--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "revision" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "forwarded_once" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "feedback_telegram_run_idx" ON "feedback" USING btree ("run_id") WHERE "feedback"."source" = 'telegram';--> statement-breakpoint
-- Rows from before: their change time is their creation, and what was sent is in LangSmith.
UPDATE "feedback" SET "updated_at" = "created_at", "forwarded_once" = ("forwarded_at" IS NOT NULL);
