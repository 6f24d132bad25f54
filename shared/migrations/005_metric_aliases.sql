-- What users call metrics that the catalog does not: every phrase that missed, or that only
-- a fuzzy or embedding fallback understood, and the aliases finq learned from them.
-- Metric ids are checked in code against shared.metric_catalog (the one source of the
-- catalog), not by a foreign key, so these tables work before any dataset is loaded.
CREATE TABLE alias_misses (
    phrase      text PRIMARY KEY,          -- normalized (shared.metric_resolver.normalize_phrase)
    example     text NOT NULL,             -- the latest wording as the user typed it
    count       integer NOT NULL DEFAULT 1,
    first_seen  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now(),
    resolved_to text,                      -- the metric a fallback chose; NULL for a miss
    method      text CHECK (method IN ('fuzzy', 'embedding')),
    confidence  double precision
);

CREATE INDEX alias_misses_last_seen ON alias_misses (last_seen DESC);

-- A fallback match waiting for confirmation: when the same conversation later names the
-- metric exactly, the user has accepted the reading and the phrase becomes a learned alias.
CREATE TABLE alias_pending (
    conversation_id text NOT NULL,
    phrase          text NOT NULL,
    metric          text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, phrase)
);

CREATE TABLE learned_aliases (
    phrase       text PRIMARY KEY,         -- normalized
    metric       text NOT NULL,
    learned_at   timestamptz NOT NULL DEFAULT now(),
    confirmed_by text NOT NULL             -- the request whose exact use confirmed it
);
