-- The filings of each company as EDGAR's submissions JSON lists them: what a question
-- like "Apple's latest 10-K" is answered from, with the document's EDGAR URL.
CREATE TABLE filings (
    accession        text PRIMARY KEY,   -- "0000320193-23-000106"
    symbol           text REFERENCES companies (symbol),
    cik              text NOT NULL,      -- 10 digits, zero-padded
    form             text NOT NULL,      -- "10-K", "10-Q", "8-K", "DEF 14A", "10-K/A"
    filed            date NOT NULL,
    report_date      date,               -- period end of a 10-K/10-Q; event date of an 8-K
    -- Only for periodic reports (10-K, 10-Q, 20-F, 40-F and their amendments): the other
    -- forms have no period of their own. 0 is an annual report, 1-3 a 10-Q (no 10-Q for Q4).
    fiscal_year      integer,
    fiscal_quarter   integer CHECK (fiscal_quarter BETWEEN 0 AND 3),
    primary_document text,
    description      text,
    url              text NOT NULL
);

-- "The latest N filings of a company, of these forms": one index range scan, newest first.
CREATE INDEX filings_symbol_form_filed ON filings (symbol, form, filed DESC);
