-- Every share class's ticker of a company, its primary symbol (`symbol`) first:
-- {GOOGL,GOOG}. The ingests fill it from SEC submissions `tickers` and the
-- dei:TradingSymbol facts of inline-XBRL filings, and only ever add to it; a row written
-- by an ingest that knows no tickers (prices alone) keeps the empty default, and its
-- symbol is then its one ticker.
ALTER TABLE companies ADD COLUMN tickers text[] NOT NULL DEFAULT '{}';
