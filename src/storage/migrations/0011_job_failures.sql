DROP INDEX "feedback_pending_idx";--> statement-breakpoint
DROP INDEX "memory_decisions_due_idx";--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "failed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "error_kind" text;--> statement-breakpoint
ALTER TABLE "memory_decisions" ADD COLUMN "failed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "memory_decisions" ADD COLUMN "error_kind" text;--> statement-breakpoint
ALTER TABLE "reminder_notices" ADD COLUMN "failed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "reminder_notices" ADD COLUMN "error_kind" text;--> statement-breakpoint
CREATE INDEX "feedback_pending_idx" ON "feedback" USING btree ("next_attempt_at") WHERE "feedback"."forwarded_at" IS NULL AND "feedback"."failed_at" IS NULL;--> statement-breakpoint
CREATE INDEX "memory_decisions_due_idx" ON "memory_decisions" USING btree ("next_attempt_at") WHERE "memory_decisions"."failed_at" IS NULL;--> statement-breakpoint
UPDATE "reminder_notices" SET "failed_at" = "claimed_at", "error_kind" = CASE "status" WHEN 'undeliverable' THEN 'no_chat' ELSE 'telegram_refused' END WHERE "status" IN ('failed', 'undeliverable');
