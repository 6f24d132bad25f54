-- A user's own account, exported and deleted by the user (GET /v1/me/export, DELETE /v1/me)
-- or by an operator (`finq users delete NAME`); see shared/account_data.py. The services'
-- role cannot read or write the users table; these two functions do only what those
-- requests need, for the user the transaction acts for and no other.

-- The acting user's row, without the key's digest.
CREATE FUNCTION finq_acting_user_account()
    RETURNS TABLE (id text, name text, key_prefix text, created_at timestamptz,
                   revoked_at timestamptz, operator boolean)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT u.id, u.name, u.key_prefix, u.created_at, u.revoked_at, u.operator
        FROM users u WHERE u.id = finq_acting_user()
    $$;

-- The acting user's row removed, and with it their key: the next request with it is a 401.
-- True when a row went. The local user of a `finq up` has no key and is the installation's
-- own (requests without a key act as it): its row stays, its data goes.
CREATE FUNCTION finq_forget_acting_user() RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
    BEGIN
        DELETE FROM users WHERE id = finq_acting_user() AND id <> 'local';
        RETURN FOUND;
    END
    $$;

REVOKE ALL ON FUNCTION finq_acting_user_account() FROM PUBLIC;
REVOKE ALL ON FUNCTION finq_forget_acting_user() FROM PUBLIC;

-- A migration run alone must not leave a services' role made earlier without them (as in
-- migration 016): every role that may write the questions table, other than the owner.
DO $$
DECLARE
    service_role text;
BEGIN
    FOR service_role IN
        SELECT rolname FROM pg_roles
        WHERE rolname <> current_user AND NOT rolsuper AND rolname NOT LIKE 'pg\_%'
          AND has_table_privilege(rolname, 'questions', 'INSERT')
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION finq_acting_user_account(), '
                       'finq_forget_acting_user() TO %I', service_role);
    END LOOP;
END
$$;
