CREATE UNLOGGED TABLE "chat_turn_locks" (
	"user_id" text PRIMARY KEY NOT NULL,
	"ticket" bigint NOT NULL,
	"holder" text NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNLOGGED TABLE "chat_turns" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"holder" text NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "chat_turns_user_idx" ON "chat_turns" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "chat_turns_holder_idx" ON "chat_turns" USING btree ("holder");