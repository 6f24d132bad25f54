-- Keyword search under row-level security (issue 27, scale of search).
--
-- The services' role reads chunks under the row-level security policy of 013. PostgreSQL
-- evaluates a policy's condition before any condition of the query whose function is not
-- LEAKPROOF, and may then use no index for the latter: `tsv @@ query` (ts_match_vq) is not
-- marked leakproof, so every keyword ranking and word count read every chunk (350 ms at
-- 20,000 chunks, seconds at a million; bench/search_scale.py), while the owner, to whom no
-- policy applies, had the GIN index. ts_match_vq raises no error and has no effect that
-- depends on the row it reads, which is what LEAKPROOF promises.
--
-- Only a superuser may mark a function LEAKPROOF. finq's own PostgreSQL migrates as one;
-- where the owner is not (the CNPG deployment), a superuser runs the ALTER below once, and
-- this migration says so instead of failing.
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
    ELSE
        RAISE NOTICE 'keyword search needs a superuser to run: ALTER FUNCTION '
                     'pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF';
    END IF;
END
$$;

-- Which words of a question are rare enough to rank by (document_search.rare_words) is read,
-- over a large search, from ANALYZE's most common lexemes of `tsv` and their shares: 10,000
-- of them rather than the default 1,000, so a word outside the list is estimated rarer than
-- the 10,000th word of the filings, not than the 1,000th.
ALTER TABLE chunks ALTER COLUMN tsv SET STATISTICS 1000;

-- The tables a figure is looked for among (the search's `table_hits`): a few in a hundred
-- chunks are tables, and without an index of their own PostgreSQL read every chunk to find
-- the tables that hold a word (67 ms at 100,000 chunks).
CREATE INDEX chunks_table_tsv ON chunks USING gin (tsv) WHERE is_table;
