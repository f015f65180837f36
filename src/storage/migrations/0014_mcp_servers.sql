-- Issue 33: the MCP servers the administrator adds, what each user may use and has switched
-- on (with their own credential for an HTTP server, encrypted), standing "always allow"
-- decisions and the tool calls waiting for a person's decision.
CREATE TABLE "mcp_servers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"transport" text NOT NULL,
	"command" text,
	"args" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"env" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"url" text,
	"enabled" boolean DEFAULT false NOT NULL,
	"restricted" boolean DEFAULT false NOT NULL,
	"trusted" boolean DEFAULT false NOT NULL,
	"shared_process" boolean DEFAULT false NOT NULL,
	"approval_tools" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"approved_fingerprint" text,
	"approved_tools" jsonb,
	"seen_fingerprint" text,
	"seen_tools" jsonb,
	"last_error" text,
	"last_stderr" text,
	"last_error_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_name_idx" ON "mcp_servers" USING btree ("name");
--> statement-breakpoint
CREATE TABLE "mcp_server_users" (
	"server_id" uuid NOT NULL REFERENCES "mcp_servers"("id") ON DELETE CASCADE,
	"user_id" text NOT NULL,
	"allowed" boolean,
	"enabled" boolean,
	"credential_header" text,
	"credential" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "mcp_server_users_pk" PRIMARY KEY("server_id","user_id")
);
--> statement-breakpoint
CREATE INDEX "mcp_server_users_user_idx" ON "mcp_server_users" USING btree ("user_id");
--> statement-breakpoint
CREATE TABLE "mcp_always_allow" (
	"user_id" text NOT NULL,
	"server_id" uuid NOT NULL REFERENCES "mcp_servers"("id") ON DELETE CASCADE,
	"tool" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "mcp_always_allow_pk" PRIMARY KEY("user_id","server_id","tool")
);
--> statement-breakpoint
CREATE TABLE "tool_approvals" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"run_id" uuid NOT NULL,
	"server_id" uuid NOT NULL REFERENCES "mcp_servers"("id") ON DELETE CASCADE,
	"tool" text NOT NULL,
	"arguments" jsonb NOT NULL,
	"decision" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"decided_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "tool_approvals_user_idx" ON "tool_approvals" USING btree ("user_id","created_at");
