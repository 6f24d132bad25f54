-- Filings and documents, cut into chunks for hybrid search (vector + keyword).
-- The embedding column's dimension follows the embedder setting: the column is declared
-- without one here and typed (with its HNSW index) by the store when it first writes
-- chunks, see services/ingest/document_store.py.
CREATE TABLE documents (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    collection          text NOT NULL DEFAULT 'filings',   -- filings, uploads, glossary, courses
    title               text NOT NULL,
    doc_type            text NOT NULL,                     -- pdf, html, docx, txt, md, course
    symbol              text,
    company             text,
    form                text,
    fiscal_year         integer,
    fiscal_quarter      integer,
    period_end          date,
    filed               date,
    source_name         text,                              -- the file name as given
    source_url          text,
    content_sha256      text NOT NULL,
    page_count          integer,
    nonempty_page_count integer,
    table_count         integer NOT NULL DEFAULT 0,
    chunk_count         integer NOT NULL DEFAULT 0,
    metadata            jsonb NOT NULL DEFAULT '{}',       -- course instructor and lessons
    status              text NOT NULL DEFAULT 'pending',   -- pending, parsing, embedding, ready, failed
    progress            real NOT NULL DEFAULT 0,           -- 0..1 of the current job
    error               jsonb,                             -- {code, message} when failed
    user_id             text,                              -- who uploaded it (null: ingested by finq)
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- The same bytes in the same collection (and, for uploads, from the same user) are one
-- document: a re-ingest replaces its chunks.
CREATE UNIQUE INDEX documents_identity
    ON documents (collection, content_sha256, (coalesce(user_id, '')));

CREATE INDEX documents_filters ON documents (symbol, form, fiscal_year);
CREATE INDEX documents_title ON documents (lower(title));

CREATE TABLE chunks (
    id              bigserial PRIMARY KEY,
    document_id     uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    chunk_index     integer NOT NULL,
    page            integer,
    page_end        integer,
    heading         text,
    text            text NOT NULL,
    context         text NOT NULL DEFAULT '',   -- the temporal prefix embedded with the text
    is_table        boolean NOT NULL DEFAULT false,
    table_number    integer,
    quality         real NOT NULL,
    temporal        jsonb NOT NULL DEFAULT '{}',
    -- The document's filter fields, copied so a filtered vector search needs no join.
    collection      text NOT NULL,
    symbol          text,
    form            text,
    fiscal_year     integer,
    fiscal_quarter  integer,
    period_end      date,
    embedding       vector,
    tsv             tsvector GENERATED ALWAYS AS (
                        to_tsvector('english', coalesce(heading, '') || ' ' || text)
                    ) STORED,
    UNIQUE (document_id, chunk_index)
);

CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_filters ON chunks (collection, symbol, fiscal_year, form);
CREATE INDEX chunks_temporal ON chunks USING gin (temporal jsonb_path_ops);
