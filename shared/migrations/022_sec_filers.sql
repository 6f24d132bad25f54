-- SEC's directory of filers (shared/sec_filers.py, `finq ingest directory`): every company
-- with a ticker, one row per CIK, its share classes' tickers together. Public data, like
-- the figures; the router reads it to name a company finq knows of but holds no figures for
-- (services/router/filer_directory.py).
CREATE TABLE sec_filers (
    cik           bigint PRIMARY KEY,
    name          text NOT NULL,              -- as SEC writes it: "NVIDIA CORP"
    tickers       text[] NOT NULL,            -- every share class's, in SEC's order
    rank          integer NOT NULL,           -- place in SEC's list (by market value)
    former_names  text[] NOT NULL DEFAULT '{}',
    loaded_at     timestamptz NOT NULL DEFAULT now()
);
