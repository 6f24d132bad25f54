-- The reconciler (services/gateway/reconciler.py) publishes again, from every user's rows,
-- questions saved but not answered some seconds after they were asked and still within
-- their deadline plus the retry budget, and uploads stored but never begun. The same
-- message ids make a question the stream still holds a duplicate the server drops.
DROP FUNCTION finq_unanswered_questions();
CREATE FUNCTION finq_unanswered_questions(asked_before timestamptz, due_after timestamptz)
    RETURNS TABLE (request_id text, conversation_id text, user_id text, question text,
                   deadline timestamptz, created_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT q.request_id, q.conversation_id, q.user_id, q.question, q.deadline, q.created_at
        FROM questions q
        WHERE q.created_at < asked_before AND q.deadline > due_after
          AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.request_id = q.request_id)
        ORDER BY q.created_at
        LIMIT 1000
    $$;
REVOKE ALL ON FUNCTION finq_unanswered_questions(timestamptz, timestamptz) FROM PUBLIC;

CREATE INDEX questions_created ON questions (created_at);

DROP FUNCTION finq_unfinished_uploads(text);
CREATE FUNCTION finq_unfinished_uploads(wanted_collection text, stored_before timestamptz)
    RETURNS TABLE (id uuid, user_id text, ingest_runs integer, file_name text,
                   content_type text, metadata jsonb, created_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT d.id, d.user_id, d.ingest_runs, f.file_name, f.content_type, d.metadata,
               d.created_at
        FROM documents d JOIN document_files f ON f.document_id = d.id
        WHERE d.collection = wanted_collection AND d.updated_at < stored_before
          AND d.status IN ('pending', 'parsing', 'embedding') AND d.user_id IS NOT NULL
        ORDER BY d.created_at
        LIMIT 1000
    $$;
REVOKE ALL ON FUNCTION finq_unfinished_uploads(text, timestamptz) FROM PUBLIC;
