-- A metric read by composition ("R&D as a share of revenue" → the catalog's ratio of the two)
-- is a fallback reading too, and is logged with the fuzzy and embedding ones.
ALTER TABLE alias_misses DROP CONSTRAINT IF EXISTS alias_misses_method_check;
ALTER TABLE alias_misses
    ADD CONSTRAINT alias_misses_method_check
    CHECK (method IN ('composed', 'fuzzy', 'embedding'));
