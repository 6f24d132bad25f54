-- The stored figures a derived value was computed from, keyed by each term as its
-- provenance's formula writes it: {"gross_profit": 169148000000.0, "revenue": 383285000000.0},
-- {"stockholders_equity": ..., "stockholders_equity[-1]": ...}. Answers show this arithmetic
-- and the validator accepts these figures as fetched. NULL for reported values.
ALTER TABLE metric_values ADD COLUMN inputs jsonb;
