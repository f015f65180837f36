ALTER TABLE "mcp_server_users" ADD COLUMN "refused_reason" text;--> statement-breakpoint
ALTER TABLE "mcp_server_users" ADD COLUMN "refused_at" timestamp with time zone;