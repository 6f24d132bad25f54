-- One row per request: what the router decided, what the tools returned, how the answer
-- validated, how long each stage took and what a model cost. Written by the validator in
-- the same statement as the answer; read by GET /v1/requests/{request_id}.
CREATE TABLE query_log (
    request_id      text PRIMARY KEY,
    conversation_id text NOT NULL,
    user_id         text NOT NULL,
    question        text NOT NULL,
    intent          text,
    decided_by      text,
    route           jsonb,
    tools           jsonb NOT NULL DEFAULT '[]',   -- each call: tool, arguments, error, missing, facts
    validation      jsonb NOT NULL,
    attempts        integer NOT NULL,
    timings_ms      jsonb NOT NULL DEFAULT '{}',   -- stage → milliseconds
    total_ms        double precision,              -- from the gateway's receipt to the answer
    tokens          jsonb NOT NULL DEFAULT '{}',
    cost_usd        double precision,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX query_log_created ON query_log (created_at DESC);
CREATE INDEX query_log_user ON query_log (user_id, created_at DESC);
