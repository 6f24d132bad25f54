-- Operators: the users who may see how finq is doing for everyone (GET /v1/admin/..., the
-- web app's /admin page): failed validations, questions finq could not answer, the
-- slowest questions, and the dead letters. The local user of a `finq up` is the machine's
-- owner and so an operator; `finq users add NAME --operator` makes others.
ALTER TABLE users ADD COLUMN IF NOT EXISTS operator boolean NOT NULL DEFAULT false;
UPDATE users SET operator = true WHERE id = 'local';

-- Whether the acting user is an operator. The services' role cannot read the users table;
-- the gateway asks this before it answers an operator's request, and every function below
-- asks it again, so the database refuses other users' rows to a non-operator whatever the
-- code above it does.
CREATE FUNCTION finq_acting_user_is_operator() RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT coalesce((SELECT operator FROM users
                         WHERE id = finq_acting_user() AND revoked_at IS NULL), false)
    $$;

-- Raises insufficient_privilege unless the acting user is an operator: the first thing
-- each function below does.
CREATE FUNCTION finq_require_operator() RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
    BEGIN
        IF NOT finq_acting_user_is_operator() THEN
            RAISE EXCEPTION 'only an operator may read every user''s questions'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END
    $$;

-- Questions of every user, for an operator: `kind` is 'failed' (validation did not pass),
-- 'unanswerable' (out of scope, or a tool found no data for what was asked), or 'slowest'
-- (by the time from the gateway's receipt to the answer), each newest first but 'slowest',
-- within the last `since`.
CREATE FUNCTION finq_operator_questions(kind text, since timestamptz, most integer)
    RETURNS TABLE (request_id text, user_name text, question text, intent text,
                   validation jsonb, missing jsonb, total_ms double precision,
                   created_at timestamptz)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
    BEGIN
        PERFORM finq_require_operator();
        IF kind NOT IN ('failed', 'unanswerable', 'slowest') THEN
            RAISE EXCEPTION 'unknown kind %', kind USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RETURN QUERY
        WITH asked AS (
            SELECT q.*,
                   (SELECT coalesce(jsonb_agg(DISTINCT gap), '[]'::jsonb)
                    FROM jsonb_array_elements(q.tools) AS call,
                         jsonb_array_elements_text(
                             CASE jsonb_typeof(call -> 'missing')
                                  WHEN 'array' THEN call -> 'missing'
                                  ELSE '[]'::jsonb END) AS gap) AS gaps
            FROM query_log q
            WHERE q.created_at >= since
        )
        SELECT a.request_id, u.name, a.question, a.intent, a.validation, a.gaps,
               a.total_ms, a.created_at
        FROM asked a LEFT JOIN users u ON u.id = a.user_id
        WHERE CASE kind
                  WHEN 'failed' THEN NOT coalesce((a.validation ->> 'passed')::boolean, true)
                  WHEN 'unanswerable' THEN a.intent = 'out_of_scope'
                                           OR jsonb_array_length(a.gaps) > 0
                  ELSE a.total_ms IS NOT NULL
              END
        ORDER BY CASE WHEN kind = 'slowest' THEN a.total_ms END DESC NULLS LAST,
                 a.created_at DESC
        LIMIT most;
    END
    $$;

-- A saved question, of any user, for an operator replaying its dead letter: the gateway
-- publishes it again as its own user.
CREATE FUNCTION finq_operator_question(wanted text)
    RETURNS TABLE (request_id text, conversation_id text, user_id text, question text,
                   created_at timestamptz, answered boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
    BEGIN
        PERFORM finq_require_operator();
        RETURN QUERY
        SELECT q.request_id, q.conversation_id, q.user_id, q.question, q.created_at,
               EXISTS (SELECT 1 FROM answers a WHERE a.request_id = q.request_id)
        FROM questions q WHERE q.request_id = wanted;
    END
    $$;

REVOKE ALL ON FUNCTION finq_acting_user_is_operator() FROM PUBLIC;
REVOKE ALL ON FUNCTION finq_require_operator() FROM PUBLIC;
REVOKE ALL ON FUNCTION finq_operator_questions(text, timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION finq_operator_question(text) FROM PUBLIC;
