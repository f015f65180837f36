-- Hand-edited after drizzle-kit generate: the search functions come first (the generated
-- column needs them), and each user's existing history becomes one conversation, their
-- current one, before `messages.conversation_id` becomes NOT NULL.
CREATE FUNCTION parley_message_text(content jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE jsonb_typeof(content -> 'content')
    WHEN 'string' THEN content ->> 'content'
    WHEN 'array' THEN (SELECT coalesce(string_agg(part ->> 'text', ' '), '')
                         FROM jsonb_array_elements(content -> 'content') AS part
                        WHERE part ->> 'type' = 'text')
    ELSE '' END
$$;
--> statement-breakpoint
-- The words of a question or an answer: PostgreSQL's 'simple' configuration (lower-cased
-- words, no stemming, no stop-words), plus the overlapping character bigrams of every run of
-- Hangul, Han or Kana, as src/documents/lexical-terms.ts indexes documents: Korean attaches
-- particles to words ("계약서를"), so "계약서" finds it through the bigrams it shares.
CREATE FUNCTION parley_search_vector(role text, content jsonb) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN role IN ('user', 'assistant') THEN
    to_tsvector('simple', t) || array_to_tsvector(ARRAY(
      SELECT DISTINCT CASE WHEN length(run[1]) = 1 THEN run[1] ELSE substr(run[1], i, 2) END
        FROM regexp_matches(t, '[\u1100-\u11FF\u3040-\u30FF\u3130-\u318F\u3400-\u4DBF\u4E00-\u9FFF\uAC00-\uD7A3]+', 'g') AS run,
             generate_series(1, greatest(length(run[1]) - 1, 1)) AS i))
  END
  FROM (SELECT lower(left(parley_message_text(content), 100000)) AS t) AS words
$$;
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"title" text DEFAULT '' NOT NULL,
	"title_source" text DEFAULT 'question' NOT NULL,
	"pinned" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"leaf_run_id" uuid,
	"bytes" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "current_conversations" (
	"user_id" text PRIMARY KEY NOT NULL,
	"conversation_id" uuid NOT NULL
);
--> statement-breakpoint
CREATE TABLE "title_requests" (
	"conversation_id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"failed_at" timestamp with time zone,
	"error_kind" text
);
--> statement-breakpoint
ALTER TABLE "chat_runs" ADD COLUMN "conversation_id" uuid;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "conversation_id" uuid;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "parent_run_id" uuid;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "on_path" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "telegram_chats" ADD COLUMN "conversation_id" uuid;--> statement-breakpoint
-- One conversation per user with a history, titled by its first question, made current.
INSERT INTO "conversations" ("id", "user_id", "title", "created_at", "updated_at")
SELECT gen_random_uuid(), h.user_id,
       left(regexp_replace(btrim(coalesce((
         SELECT parley_message_text(m.content) FROM "messages" m
          WHERE m.user_id = h.user_id AND m.role = 'user' ORDER BY m.id LIMIT 1), '')), '\s+', ' ', 'g'), 60),
       h.first_at, h.last_at
  FROM (SELECT user_id, min(created_at) AS first_at, max(created_at) AS last_at
          FROM "messages" GROUP BY user_id) AS h;
--> statement-breakpoint
INSERT INTO "current_conversations" ("user_id", "conversation_id")
SELECT "user_id", "id" FROM "conversations";
--> statement-breakpoint
-- The history was linear: each turn follows the one before it, all on the active path.
UPDATE "messages" m SET "conversation_id" = c.id
  FROM "conversations" c WHERE c.user_id = m.user_id;
--> statement-breakpoint
UPDATE "messages" m SET "parent_run_id" = t.parent_run_id
  FROM (SELECT run_id, lag(run_id) OVER (PARTITION BY user_id ORDER BY id) AS parent_run_id
          FROM "messages" WHERE role = 'user' AND run_id IS NOT NULL) AS t
 WHERE m.run_id = t.run_id AND t.parent_run_id IS NOT NULL;
--> statement-breakpoint
UPDATE "conversations" c SET "leaf_run_id" = (
  SELECT m.run_id FROM "messages" m
   WHERE m.conversation_id = c.id AND m.run_id IS NOT NULL ORDER BY m.id DESC LIMIT 1),
  "bytes" = (SELECT coalesce(sum(octet_length(m.content::text)), 0) FROM "messages" m
              WHERE m.conversation_id = c.id);
--> statement-breakpoint
UPDATE "chat_runs" r SET "conversation_id" = m.conversation_id
  FROM (SELECT DISTINCT run_id, conversation_id FROM "messages" WHERE run_id IS NOT NULL) AS m
 WHERE r.id = m.run_id;
--> statement-breakpoint
ALTER TABLE "messages" ALTER COLUMN "conversation_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "search" "tsvector" GENERATED ALWAYS AS (parley_search_vector(role, content)) STORED;--> statement-breakpoint
ALTER TABLE "current_conversations" ADD CONSTRAINT "current_conversations_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "title_requests" ADD CONSTRAINT "title_requests_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "conversations_list_idx" ON "conversations" USING btree ("user_id","pinned","updated_at","id");--> statement-breakpoint
CREATE INDEX "title_requests_due_idx" ON "title_requests" USING btree ("created_at") WHERE "title_requests"."failed_at" IS NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "telegram_chats" ADD CONSTRAINT "telegram_chats_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "messages_path_idx" ON "messages" USING btree ("conversation_id","id") WHERE "messages"."on_path";--> statement-breakpoint
CREATE INDEX "messages_conversation_idx" ON "messages" USING btree ("conversation_id","id");--> statement-breakpoint
CREATE INDEX "messages_run_idx" ON "messages" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "messages_parent_idx" ON "messages" USING btree ("conversation_id","parent_run_id") WHERE "messages"."role" = 'user';--> statement-breakpoint
CREATE INDEX "messages_search_idx" ON "messages" USING gin ("search");
