-- Document ingest is a stage of its own: the gateway stores an upload's bytes here, in the
-- same transaction as its `documents` row (durable once committed, on any machine, with no
-- shared disk between the gateway and the ingest workers), and publishes
-- finq.v2.document.uploaded; the ingest stage reads the bytes, parses them in a child
-- process with limits, embeds and stores the chunks, and deletes the bytes.
CREATE TABLE document_files (
    document_id  uuid PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
    user_id      text NOT NULL DEFAULT finq_acting_user(),
    file_name    text NOT NULL,          -- as the user named it
    content_type text,
    size_bytes   bigint NOT NULL,
    content      bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
-- PDFs and DOCX are compressed already: store them as they are, without a second pass.
ALTER TABLE document_files ALTER COLUMN content SET STORAGE EXTERNAL;

ALTER TABLE document_files ENABLE ROW LEVEL SECURITY;
ALTER TABLE document_files FORCE ROW LEVEL SECURITY;
CREATE POLICY document_files_own_rows ON document_files
    USING (user_id = finq_acting_user()) WITH CHECK (user_id = finq_acting_user());
CREATE POLICY document_files_owner_all ON document_files TO CURRENT_USER
    USING (true) WITH CHECK (true);

-- How often the gateway queued the document (a failed file uploaded again is queued anew:
-- its message id must differ from the first one's), and how often the ingest stage began
-- reading it in this run: a file that kills its worker every time is failed after a few
-- tries, not retried forever.
ALTER TABLE documents ADD COLUMN ingest_runs integer NOT NULL DEFAULT 0;
ALTER TABLE documents ADD COLUMN ingest_attempts integer NOT NULL DEFAULT 0;

-- Uploads stored but not yet read, of every user, for the gateway to publish again at
-- start (a crash between the commit and the publish), with the run they belong to.
DROP FUNCTION finq_unfinished_uploads(text);
CREATE FUNCTION finq_unfinished_uploads(wanted_collection text)
    RETURNS TABLE (id uuid, user_id text, ingest_runs integer, file_name text,
                   content_type text, metadata jsonb, created_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT d.id, d.user_id, d.ingest_runs, f.file_name, f.content_type, d.metadata,
               d.created_at
        FROM documents d JOIN document_files f ON f.document_id = d.id
        WHERE d.collection = wanted_collection
          AND d.status IN ('pending', 'parsing', 'embedding') AND d.user_id IS NOT NULL
        ORDER BY d.created_at
    $$;
REVOKE ALL ON FUNCTION finq_unfinished_uploads(text) FROM PUBLIC;

-- Uploads from before this migration that were never read: their files sat on the
-- gateway's disk, which the ingest stage does not read. They fail with a reason instead of
-- waiting forever.
UPDATE documents SET status = 'failed', progress = 0,
    error = '{"code": "upload_lost", "message": "uploaded before ingest became a stage of its own; upload the file again"}'
WHERE collection = 'uploads' AND status IN ('pending', 'parsing', 'embedding');
