-- Tell the processes that keep metric values in memory (services/tools/metric_values.py)
-- when the figures change: every statement that writes metric_values or companies sends
-- NOTIFY finq_metric_values, delivered when its transaction commits.
CREATE FUNCTION finq_notify_metric_values() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
        PERFORM pg_notify('finq_metric_values', TG_TABLE_NAME);
        RETURN NULL;
    END
    $$;

CREATE TRIGGER metric_values_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON metric_values
    FOR EACH STATEMENT EXECUTE FUNCTION finq_notify_metric_values();

CREATE TRIGGER companies_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON companies
    FOR EACH STATEMENT EXECUTE FUNCTION finq_notify_metric_values();
