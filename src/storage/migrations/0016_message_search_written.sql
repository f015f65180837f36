-- The search column stops being generated: parley_search_vector() ran for every stored message
-- (two SQL functions, a regular expression and a sort: ~0.4 ms of the embedded engine's CPU a
-- chat, bench/RESULTS.md, issue 31). The INSERT that stores a turn now writes the same terms
-- (src/storage/run-repository.ts); the values already stored stay as they are.
ALTER TABLE "messages" ALTER COLUMN "search" DROP EXPRESSION IF EXISTS;
