CREATE TABLE "run_streams" (
	"run_id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"status" text DEFAULT 'running' NOT NULL,
	"holder" text NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"stop_requested" boolean DEFAULT false NOT NULL,
	"last_seq" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "run_events" (
	"run_id" uuid NOT NULL,
	"seq" integer NOT NULL,
	"event" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_events_run_id_seq_pk" PRIMARY KEY("run_id","seq")
);
--> statement-breakpoint
ALTER TABLE "run_events" ADD CONSTRAINT "run_events_run_id_run_streams_run_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."run_streams"("run_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "run_streams_user_idx" ON "run_streams" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "run_streams_holder_idx" ON "run_streams" USING btree ("holder") WHERE "run_streams"."status" = 'running';--> statement-breakpoint
CREATE INDEX "run_streams_ended_idx" ON "run_streams" USING btree ("ended_at");
