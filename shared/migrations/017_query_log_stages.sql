-- Each stage's run of a request, with when it began and how long it took (every attempt's:
-- a repaired answer shows the answerer and validator more than once), for
-- GET /v1/traces/{trace_id}. Rows written before this keep '[]' and are shown from
-- timings_ms (durations without starts). A validator older than this migration writes no
-- stages and gets the default.
ALTER TABLE query_log ADD COLUMN IF NOT EXISTS stages jsonb NOT NULL DEFAULT '[]';

-- GET /v1/traces/{trace_id} finds a trace's questions by their trace id.
CREATE INDEX IF NOT EXISTS questions_trace_id ON questions (trace_id);
