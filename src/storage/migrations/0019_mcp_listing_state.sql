-- An MCP server's tool listing: whether the latest one was cut at Parley's page cap, and since
-- when a listing the server asked for (tools/list_changed) has been failing (the definitions in
-- use are then the older ones). Both shown to the administrator and the server's users.
ALTER TABLE "mcp_servers" ADD COLUMN "listing_cut" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD COLUMN "listing_stale_since" timestamp with time zone;