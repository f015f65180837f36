-- Knowledge graph: triples are unique per user by their normalised keys (graph/term-key.ts),
-- not by their raw text. Rows written before this migration get keys that are lower-cased and
-- trimmed (the application's key also applies NFKC and collapses spaces).
DROP INDEX "graph_triples_unique_idx";--> statement-breakpoint
ALTER TABLE "graph_triples" ADD COLUMN "subject_key" text;--> statement-breakpoint
ALTER TABLE "graph_triples" ADD COLUMN "relation_key" text;--> statement-breakpoint
ALTER TABLE "graph_triples" ADD COLUMN "object_key" text;--> statement-breakpoint
UPDATE "graph_triples" SET "subject_key" = lower(btrim("subject")), "relation_key" = lower(btrim("relation")), "object_key" = lower(btrim("object"));--> statement-breakpoint
DELETE FROM "graph_triples" a USING "graph_triples" b WHERE a."user_id" = b."user_id" AND a."subject_key" = b."subject_key" AND a."relation_key" = b."relation_key" AND a."object_key" = b."object_key" AND a."id" > b."id";--> statement-breakpoint
ALTER TABLE "graph_triples" ALTER COLUMN "subject_key" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "graph_triples" ALTER COLUMN "relation_key" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "graph_triples" ALTER COLUMN "object_key" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "graph_triples_key_idx" ON "graph_triples" USING btree ("user_id","subject_key","relation_key","object_key");--> statement-breakpoint
CREATE INDEX "graph_triples_user_id_idx" ON "graph_triples" USING btree ("user_id","id");
