-- The distinct periods held per company (issue 27, router start at scale): always exactly
-- the DISTINCT (symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end)
-- of metric_values, kept by the database itself, so the router's start-up queries (the
-- latest annual year of each company, services/router/main.py DIRECTORY_SQL, and each
-- company's periods, services/router/fiscal_calendar.py FISCAL_CALENDAR_SQL) read a few
-- hundred rows per company instead of every figure (7 s at 5,000 companies, 12.7 M figures).
--
-- Statement-level AFTER triggers with transition tables keep it: every write of
-- metric_values whatever the path (the bundled dataset's COPY and upsert, `finq ingest
-- companyfacts`/`sec`, derived figures, a DELETE, a TRUNCATE) changes it in the same
-- statement, one set-based upsert per statement rather than a trigger call per figure.
-- `figures` counts the figures of each period, so that removing or moving one figure
-- removes its period exactly when it was the period's last, without reading metric_values
-- again; concurrent writers of one period add to the same row, under its row lock.
CREATE TABLE metric_periods (
    symbol         text NOT NULL,
    period_type    text NOT NULL,
    fiscal_year    integer NOT NULL,
    fiscal_quarter integer NOT NULL,
    period_start   date,
    period_end     date NOT NULL,
    figures        integer NOT NULL CHECK (figures >= 0),
    -- A period with no start (an instant, or a figure SEC gave none) is one period.
    CONSTRAINT metric_periods_key UNIQUE NULLS NOT DISTINCT
        (symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end)
);

-- Adds the figures a statement inserted (`new_rows`) and subtracts those it removed
-- (`old_rows`; an UPDATE has both), then drops the periods left with none. The owner's:
-- the services' role reads the table but may not write it (policies below), while a write
-- of metric_values by any role must keep it right.
CREATE FUNCTION finq_count_metric_periods() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO metric_periods AS p (symbol, period_type, fiscal_year, fiscal_quarter,
                                             period_start, period_end, figures)
            SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end,
                   count(*)
            FROM new_rows
            GROUP BY symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end
            -- One order for every writer, so two that share periods do not deadlock.
            ORDER BY symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end
            ON CONFLICT ON CONSTRAINT metric_periods_key
                DO UPDATE SET figures = p.figures + EXCLUDED.figures;
            RETURN NULL;
        END IF;

        IF TG_OP = 'UPDATE' THEN
            -- Only a figure whose period changed moves (most updates change a value only,
            -- and every count stays as it was): the periods that lost figures on balance,
            -- then those that gained (an insert's CHECK comes before its ON CONFLICT, so a
            -- negative count is no insert).
            UPDATE metric_periods p SET figures = p.figures + m.n
            FROM (SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                         period_end, sum(n) AS n
                  FROM (SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                               period_end, 1 AS n FROM new_rows
                        UNION ALL
                        SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                               period_end, -1 FROM old_rows) moved
                  GROUP BY symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                           period_end
                  HAVING sum(n) < 0) m
            WHERE p.symbol = m.symbol AND p.period_type = m.period_type
              AND p.fiscal_year = m.fiscal_year AND p.fiscal_quarter = m.fiscal_quarter
              AND p.period_start IS NOT DISTINCT FROM m.period_start
              AND p.period_end = m.period_end;
            INSERT INTO metric_periods AS p (symbol, period_type, fiscal_year, fiscal_quarter,
                                             period_start, period_end, figures)
            SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end,
                   sum(n)
            FROM (SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                         period_end, 1 AS n FROM new_rows
                  UNION ALL
                  SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                         period_end, -1 FROM old_rows) moved
            GROUP BY symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end
            HAVING sum(n) > 0
            ORDER BY symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end
            ON CONFLICT ON CONSTRAINT metric_periods_key
                DO UPDATE SET figures = p.figures + EXCLUDED.figures;
        ELSE  -- DELETE
            UPDATE metric_periods p SET figures = p.figures - o.n
            FROM (SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                         period_end, count(*) AS n
                  FROM old_rows
                  GROUP BY symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                           period_end) o
            WHERE p.symbol = o.symbol AND p.period_type = o.period_type
              AND p.fiscal_year = o.fiscal_year AND p.fiscal_quarter = o.fiscal_quarter
              AND p.period_start IS NOT DISTINCT FROM o.period_start
              AND p.period_end = o.period_end;
        END IF;

        -- The periods of the figures removed that have none left.
        DELETE FROM metric_periods p
        USING (SELECT DISTINCT symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                               period_end
               FROM old_rows) o
        WHERE p.figures = 0
          AND p.symbol = o.symbol AND p.period_type = o.period_type
          AND p.fiscal_year = o.fiscal_year AND p.fiscal_quarter = o.fiscal_quarter
          AND p.period_start IS NOT DISTINCT FROM o.period_start
          AND p.period_end = o.period_end;
        RETURN NULL;
    END
    $$;

-- A trigger with transition tables fires on one event only (PostgreSQL refuses
-- REFERENCING on a trigger of several events), so one trigger per event. An INSERT ... ON
-- CONFLICT DO UPDATE fires both the INSERT one (the rows it inserted) and the UPDATE one
-- (the rows it updated); COPY fires the INSERT one.
CREATE TRIGGER metric_periods_insert
    AFTER INSERT ON metric_values REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finq_count_metric_periods();

CREATE TRIGGER metric_periods_update
    AFTER UPDATE ON metric_values REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finq_count_metric_periods();

CREATE TRIGGER metric_periods_delete
    AFTER DELETE ON metric_values REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finq_count_metric_periods();

-- TRUNCATE has no transition table (nor row triggers): a trigger of its own empties the
-- periods with the figures (also when metric_values is truncated by a cascade).
CREATE FUNCTION finq_clear_metric_periods() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
    BEGIN
        DELETE FROM metric_periods;
        RETURN NULL;
    END
    $$;

CREATE TRIGGER metric_periods_truncate
    AFTER TRUNCATE ON metric_values
    FOR EACH STATEMENT EXECUTE FUNCTION finq_clear_metric_periods();

REVOKE ALL ON FUNCTION finq_count_metric_periods() FROM PUBLIC;
REVOKE ALL ON FUNCTION finq_clear_metric_periods() FROM PUBLIC;

-- The figures already held.
INSERT INTO metric_periods (symbol, period_type, fiscal_year, fiscal_quarter, period_start,
                            period_end, figures)
SELECT symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end, count(*)
FROM metric_values
GROUP BY symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end;

-- Public data, read by everyone and written by the owner's triggers only, as the reference
-- list of instruments (migration 016): the services' role holds row privileges on every
-- table (`ensure_service_role`, shared/db.py), so a policy keeps it from writing.
ALTER TABLE metric_periods ENABLE ROW LEVEL SECURITY;
ALTER TABLE metric_periods FORCE ROW LEVEL SECURITY;
CREATE POLICY metric_periods_read ON metric_periods FOR SELECT USING (true);
CREATE POLICY metric_periods_owner_all ON metric_periods TO CURRENT_USER
    USING (true) WITH CHECK (true);

-- A migration run alone (`finq migrate` without the services' DSN) must not leave a role
-- made earlier unable to read the new table (as in migration 016): every role that may
-- write the questions table, other than the owner.
DO $$
DECLARE
    service_role text;
BEGIN
    FOR service_role IN
        SELECT rolname FROM pg_roles
        WHERE rolname <> current_user AND NOT rolsuper AND rolname NOT LIKE 'pg\_%'
          AND has_table_privilege(rolname, 'questions', 'INSERT')
    LOOP
        EXECUTE format('GRANT SELECT ON metric_periods TO %I', service_role);
    END LOOP;
END
$$;
