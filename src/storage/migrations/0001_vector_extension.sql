-- pgvector is optional: PGlite ships it, a PostgreSQL server may not have it (Debian's
-- postgresql-15 does not), and a non-superuser may not be allowed to create it. Without it
-- Parley runs with lexical retrieval only and says so at start.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
  END IF;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'pgvector is available but this role may not create it';
END $$;
