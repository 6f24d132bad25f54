-- Daily prices, one row per company and trading day, as the source file gives them.
-- `close` is the close as downloaded (Yahoo: split-adjusted up to the download, not for
-- dividends); `adj_close` also adjusts for dividends. Rows with a missing figure are
-- skipped at ingest, never stored as zeros, so every column is NOT NULL.
CREATE TABLE prices (
    symbol    text NOT NULL REFERENCES companies (symbol),
    day       date NOT NULL,
    open      double precision NOT NULL,
    high      double precision NOT NULL,
    low       double precision NOT NULL,
    close     double precision NOT NULL,
    adj_close double precision NOT NULL,
    volume    bigint NOT NULL,
    source    text NOT NULL,            -- the file the row came from: "AAPL.csv"
    PRIMARY KEY (symbol, day)
);

-- Some companies are held with prices only (Amazon, Meta, ...): no SEC CIK is known for them.
ALTER TABLE companies ALTER COLUMN cik DROP NOT NULL;
