-- The core schema: companies, the metric catalog, metric values with provenance,
-- and the request tables the gateway and validator write.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE companies (
    symbol          text PRIMARY KEY,
    cik             text NOT NULL,
    name            text NOT NULL,     -- as SEC writes it: "Apple Inc."
    display_name    text NOT NULL,     -- as people say it: "Apple"
    fiscal_year_end text,              -- "0930" as SEC writes it
    aliases         text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE metrics (
    id          text PRIMARY KEY,      -- snake_case: revenue, net_income, eps_diluted
    label       text NOT NULL,
    category    text NOT NULL,
    unit        text NOT NULL,         -- USD, USD/share, %, x, days, shares
    description text NOT NULL,
    formula     text,
    aliases     text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE metric_values (
    symbol         text NOT NULL REFERENCES companies (symbol),
    metric         text NOT NULL REFERENCES metrics (id),
    period_type    text NOT NULL CHECK (period_type IN ('annual', 'quarterly', 'ttm')),
    fiscal_year    integer NOT NULL,
    fiscal_quarter integer NOT NULL DEFAULT 0 CHECK (fiscal_quarter BETWEEN 0 AND 4),
    period_start   date,
    period_end     date NOT NULL,
    value          double precision NOT NULL,
    unit           text NOT NULL,
    form           text,
    accession      text,
    xbrl_tag       text,
    filed          date,
    provenance     text NOT NULL,       -- "xbrl:us-gaap:Revenues" or "derived:<formula>"
    PRIMARY KEY (symbol, metric, period_type, fiscal_year, fiscal_quarter)
);

CREATE INDEX metric_values_metric_year ON metric_values (metric, fiscal_year);

CREATE TABLE questions (
    request_id      text PRIMARY KEY,
    conversation_id text NOT NULL,
    user_id         text NOT NULL,
    question        text NOT NULL,
    trace_id        text,
    deadline        timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE answers (
    request_id          text PRIMARY KEY REFERENCES questions (request_id),
    answer              text NOT NULL,
    body                jsonb NOT NULL,  -- the AnswerValidated payload as sent
    validation_passed   boolean NOT NULL,
    validation_severity text NOT NULL,
    attempt             integer NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now()
);
