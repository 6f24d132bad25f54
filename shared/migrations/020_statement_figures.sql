-- Figures read from a filing's own financial statements (services/ingest/statements.py):
-- each one cell of an income statement, balance sheet or cash-flow statement, with the page
-- it stands on, so that a company finq holds no XBRL figures for is answered from its
-- filing, and every number traces to a cell on a cited page.
--
-- A figure belongs to its document's uploader (null: a filing finq ingested for everyone)
-- and is read and written under the same policies as the document's chunks; it goes with
-- its document.
CREATE TABLE statement_figures (
    id            bigserial PRIMARY KEY,
    document_id   uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    user_id       text DEFAULT finq_acting_user(),
    symbol        text,
    statement     text NOT NULL,      -- income, balance, cash_flow
    label         text NOT NULL,      -- the line as the statement writes it
    metric        text,               -- the catalog metric the line is, when it is one
    period_end    date NOT NULL,
    months        integer,            -- 12 for a fiscal year, 3 for a quarter; null: a balance
    fiscal_year   integer,
    value         double precision NOT NULL,   -- in units (the table's scale applied)
    unit          text NOT NULL,      -- USD, USD/share
    page          integer NOT NULL,
    table_number  integer
);

CREATE INDEX statement_figures_lookup ON statement_figures (symbol, metric, fiscal_year);
CREATE INDEX statement_figures_document ON statement_figures (document_id);
CREATE INDEX statement_figures_user ON statement_figures (user_id);

ALTER TABLE statement_figures ENABLE ROW LEVEL SECURITY;
ALTER TABLE statement_figures FORCE ROW LEVEL SECURITY;
CREATE POLICY statement_figures_read ON statement_figures FOR SELECT
    USING (user_id IS NULL OR user_id = finq_acting_user());
CREATE POLICY statement_figures_insert_own ON statement_figures FOR INSERT
    WITH CHECK (user_id = finq_acting_user());
CREATE POLICY statement_figures_update_own ON statement_figures FOR UPDATE
    USING (user_id = finq_acting_user()) WITH CHECK (user_id = finq_acting_user());
CREATE POLICY statement_figures_delete_own ON statement_figures FOR DELETE
    USING (user_id = finq_acting_user());
CREATE POLICY statement_figures_owner_all ON statement_figures TO CURRENT_USER
    USING (true) WITH CHECK (true);
