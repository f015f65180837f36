-- Hand-edited: documents and chunks are rebuilt rather than altered. Nothing could ingest a
-- document before this migration (POST /ingest answered 404), so they hold no data worth
-- converting, and a new primary key on documents is simpler to create than to swap.
DROP TABLE "chunks";--> statement-breakpoint
DROP TABLE "documents";--> statement-breakpoint
CREATE TABLE "documents" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"source" text NOT NULL,
	"kind" text DEFAULT 'document' NOT NULL,
	"owner" text DEFAULT '' NOT NULL,
	"filename" text,
	"content_type" text,
	"bytes" integer,
	"chunk_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chunks" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"document_id" bigint NOT NULL,
	"owner" text DEFAULT '' NOT NULL,
	"chunk_index" integer NOT NULL,
	"content" text NOT NULL,
	"content_hash" text NOT NULL,
	"page" integer,
	"term_count" integer NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chunk_terms" (
	"chunk_id" bigint NOT NULL,
	"owner" text NOT NULL,
	"term" text NOT NULL,
	"tf" integer NOT NULL,
	"length" integer NOT NULL,
	"impact" real NOT NULL,
	CONSTRAINT "chunk_terms_chunk_id_term_pk" PRIMARY KEY("chunk_id","term")
);
--> statement-breakpoint
CREATE TABLE "corpus_stats" (
	"owner" text PRIMARY KEY NOT NULL,
	"chunks" bigint NOT NULL,
	"terms" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "term_stats" (
	"owner" text NOT NULL,
	"term" text NOT NULL,
	"df" integer NOT NULL,
	CONSTRAINT "term_stats_owner_term_pk" PRIMARY KEY("owner","term")
);
--> statement-breakpoint
ALTER TABLE "chunks" ADD CONSTRAINT "chunks_document_id_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "documents_owner_source_idx" ON "documents" USING btree ("owner","source");--> statement-breakpoint
CREATE INDEX "documents_kind_idx" ON "documents" USING btree ("kind","source");--> statement-breakpoint
CREATE INDEX "chunks_document_idx" ON "chunks" USING btree ("document_id","chunk_index");--> statement-breakpoint
CREATE INDEX "chunks_content_hash_idx" ON "chunks" USING btree ("content_hash");--> statement-breakpoint
CREATE INDEX "chunk_terms_search_idx" ON "chunk_terms" USING btree ("owner","term","impact" DESC NULLS LAST,"chunk_id","tf","length");
