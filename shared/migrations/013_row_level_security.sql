-- Isolation in the database, not only in the code: every user-owned table carries user_id,
-- has row-level security enabled and forced, and shows a connection only the rows of the
-- user its transaction acts for (`SELECT set_config('app.user_id', $1, true)`, see
-- shared/db.py). A transaction that sets no user sees and writes no user's rows.
--
-- The services connect as a role of their own (not the owner, no BYPASSRLS; made by
-- `finq migrate`, see shared/db.py ensure_service_role). The owner, who runs migrations and
-- the operator's commands, keeps a policy of its own that sees every row, and the few
-- reads that must cross users (questions left unanswered when a gateway stopped, uploads
-- left unfinished, the user a key belongs to) are SECURITY DEFINER functions below that
-- return only what that job needs.

-- The acting user, or null when the transaction set none ('' is what an unset custom
-- setting reads as once any transaction of the session has set it).
CREATE FUNCTION finq_acting_user() RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('app.user_id', true), '') $$;

-- Rows that had no user_id of their own take their parent's.
ALTER TABLE answers ADD COLUMN user_id text;
UPDATE answers a SET user_id = q.user_id FROM questions q WHERE q.request_id = a.request_id;
ALTER TABLE answers ALTER COLUMN user_id SET NOT NULL;

ALTER TABLE messages ADD COLUMN user_id text;
UPDATE messages m SET user_id = c.user_id FROM conversations c WHERE c.id = m.conversation_id;
ALTER TABLE messages ALTER COLUMN user_id SET NOT NULL;

-- A chunk belongs to its document's uploader; null for what finq ingested for everyone.
ALTER TABLE chunks ADD COLUMN user_id text;
UPDATE chunks ch SET user_id = d.user_id FROM documents d WHERE d.id = ch.document_id;

-- Public documents are the ones no user owns; say so in a column of their own, so an
-- upload can never be mistaken for (or labelled as) a company's official filing.
ALTER TABLE documents ADD COLUMN public boolean GENERATED ALWAYS AS (user_id IS NULL) STORED;

-- A row written while acting for a user is that user's unless the statement says otherwise
-- (the policies below refuse any other user_id).
ALTER TABLE questions ALTER COLUMN user_id SET DEFAULT finq_acting_user();
ALTER TABLE answers ALTER COLUMN user_id SET DEFAULT finq_acting_user();
ALTER TABLE conversations ALTER COLUMN user_id SET DEFAULT finq_acting_user();
ALTER TABLE messages ALTER COLUMN user_id SET DEFAULT finq_acting_user();
ALTER TABLE query_log ALTER COLUMN user_id SET DEFAULT finq_acting_user();
ALTER TABLE documents ALTER COLUMN user_id SET DEFAULT finq_acting_user();
ALTER TABLE chunks ALTER COLUMN user_id SET DEFAULT finq_acting_user();

CREATE INDEX answers_user ON answers (user_id);
CREATE INDEX messages_user ON messages (user_id);
CREATE INDEX chunks_user ON chunks (user_id);

-- Rows only their user reads or writes.
DO $$
DECLARE
    owned text;
BEGIN
    FOREACH owned IN ARRAY ARRAY['questions', 'answers', 'conversations', 'messages',
                                 'query_log']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', owned);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', owned);
        EXECUTE format(
            'CREATE POLICY %I ON %I USING (user_id = finq_acting_user()) '
            'WITH CHECK (user_id = finq_acting_user())', owned || '_own_rows', owned);
        EXECUTE format('CREATE POLICY %I ON %I TO CURRENT_USER USING (true) WITH CHECK (true)',
                       owned || '_owner_all', owned);
    END LOOP;

    -- Documents and chunks: everyone reads the public ones; a user reads and writes their
    -- own uploads; nobody but the owner writes a public one.
    FOREACH owned IN ARRAY ARRAY['documents', 'chunks']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', owned);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', owned);
        EXECUTE format(
            'CREATE POLICY %I ON %I FOR SELECT '
            'USING (user_id IS NULL OR user_id = finq_acting_user())', owned || '_read', owned);
        EXECUTE format(
            'CREATE POLICY %I ON %I FOR INSERT WITH CHECK (user_id = finq_acting_user())',
            owned || '_insert_own', owned);
        EXECUTE format(
            'CREATE POLICY %I ON %I FOR UPDATE USING (user_id = finq_acting_user()) '
            'WITH CHECK (user_id = finq_acting_user())', owned || '_update_own', owned);
        EXECUTE format(
            'CREATE POLICY %I ON %I FOR DELETE USING (user_id = finq_acting_user())',
            owned || '_delete_own', owned);
        EXECUTE format('CREATE POLICY %I ON %I TO CURRENT_USER USING (true) WITH CHECK (true)',
                       owned || '_owner_all', owned);
    END LOOP;
END
$$;

-- The user an API key belongs to. The services' role cannot read the users table (not even
-- the key digests); the gateway asks this function.
CREATE FUNCTION finq_user_for_key(digest text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT id FROM users WHERE key_sha256 = digest AND revoked_at IS NULL $$;

-- Questions saved but not answered before their deadline, of every user: a starting gateway
-- republishes them (each then acts for its own user).
CREATE FUNCTION finq_unanswered_questions()
    RETURNS TABLE (request_id text, conversation_id text, user_id text, question text,
                   deadline timestamptz, created_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT q.request_id, q.conversation_id, q.user_id, q.question, q.deadline, q.created_at
        FROM questions q
        WHERE q.deadline > now()
          AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.request_id = q.request_id)
        ORDER BY q.created_at
    $$;

-- Uploads a stopped ingest left unfinished, of every user: resumed at start (each then
-- acts for its own user).
CREATE FUNCTION finq_unfinished_uploads(wanted_collection text)
    RETURNS TABLE (id uuid, user_id text, source_name text, metadata jsonb)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT d.id, d.user_id, d.source_name, d.metadata FROM documents d
        WHERE d.collection = wanted_collection
          AND d.status IN ('pending', 'parsing', 'embedding') AND d.user_id IS NOT NULL
        ORDER BY d.created_at
    $$;

REVOKE ALL ON FUNCTION finq_user_for_key(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION finq_unanswered_questions() FROM PUBLIC;
REVOKE ALL ON FUNCTION finq_unfinished_uploads(text) FROM PUBLIC;
