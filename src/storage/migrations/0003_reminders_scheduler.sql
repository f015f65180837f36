CREATE TABLE "service_leases" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"state" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "reminder_notices" ADD COLUMN "status" text DEFAULT 'sent' NOT NULL;--> statement-breakpoint
ALTER TABLE "reminder_notices" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "reminder_notices" ADD COLUMN "next_attempt_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "reminder_notices" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "reminders" ADD COLUMN "time" text;--> statement-breakpoint
ALTER TABLE "reminders" ADD COLUMN "note" text;--> statement-breakpoint
ALTER TABLE "reminders" ADD COLUMN "timezone" text DEFAULT 'UTC' NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "telegram_link_code_hash" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "telegram_link_expires_at" timestamp with time zone;--> statement-breakpoint
-- A notice claimed before this migration but never marked sent counts as a crash mid-send: it is
-- due again at once (sending twice beats losing it).
UPDATE "reminder_notices" SET "status" = 'sending', "next_attempt_at" = "claimed_at" WHERE "sent_at" IS NULL;
