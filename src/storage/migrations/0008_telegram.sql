CREATE TABLE "telegram_chats" (
	"chat_id" text PRIMARY KEY NOT NULL,
	"user_id" text,
	"linked_at" timestamp with time zone,
	"hinted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "telegram_updates" (
	"bot_id" text NOT NULL,
	"update_id" bigint NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "telegram_updates_bot_id_update_id_pk" PRIMARY KEY("bot_id","update_id")
);
--> statement-breakpoint
CREATE INDEX "telegram_chats_user_id_idx" ON "telegram_chats" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "telegram_updates_received_at_idx" ON "telegram_updates" USING btree ("received_at");