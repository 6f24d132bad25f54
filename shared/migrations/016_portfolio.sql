-- A user's own portfolio (shared/portfolio): the accounts they hold, the files of activity
-- they imported, and every row of those files, split by what the row is: trades (buys and
-- sells), income (dividends and interest) and transfers (deposits, withdrawals, moves
-- between the user's accounts, fees). Positions, cost basis and cash are never stored:
-- they are replayed from these rows (shared/portfolio/ledger.py).
--
-- Every table but `instruments` is the user's own, isolated by row-level security exactly
-- as migration 013 does it. Money and quantities are `numeric`: exact, as the Decimal
-- values they are read into.

-- What a symbol is: finq's reference list, the same for every user. A file naming a symbol
-- outside it is refused at import. finq holds prices for the bundled equities only; the
-- funds, bonds and coins are known so that a real brokerage export reads.
CREATE TABLE instruments (
    symbol      text PRIMARY KEY CHECK (symbol ~ '^[A-Z][A-Z0-9.-]{0,11}$'),
    name        text NOT NULL,
    asset_class text NOT NULL
        CHECK (asset_class IN ('equity', 'etf', 'bond', 'cash', 'crypto', 'other'))
);

INSERT INTO instruments (symbol, name, asset_class) VALUES
    ('AAPL', 'Apple', 'equity'),
    ('AMZN', 'Amazon', 'equity'),
    ('FB', 'Meta Platforms (FB)', 'equity'),
    ('GOOGL', 'Alphabet', 'equity'),
    ('MSFT', 'Microsoft', 'equity'),
    ('NVDA', 'NVIDIA', 'equity'),
    ('TSLA', 'Tesla', 'equity'),
    ('VTI', 'Vanguard Total Stock Market ETF', 'etf'),
    ('VOO', 'Vanguard S&P 500 ETF', 'etf'),
    ('SPY', 'SPDR S&P 500 ETF Trust', 'etf'),
    ('QQQ', 'Invesco QQQ Trust', 'etf'),
    ('VXUS', 'Vanguard Total International Stock ETF', 'etf'),
    ('BND', 'Vanguard Total Bond Market ETF', 'bond'),
    ('AGG', 'iShares Core U.S. Aggregate Bond ETF', 'bond'),
    ('TLT', 'iShares 20+ Year Treasury Bond ETF', 'bond'),
    ('BTC', 'Bitcoin', 'crypto'),
    ('ETH', 'Ethereum', 'crypto'),
    ('SPAXX', 'Fidelity Government Money Market Fund', 'cash'),
    ('VMFXX', 'Vanguard Federal Money Market Fund', 'cash');

CREATE TABLE accounts (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    text NOT NULL DEFAULT finq_acting_user() REFERENCES users (id),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    kind       text NOT NULL
        CHECK (kind IN ('brokerage', 'ira', 'roth_ira', '401k', 'cash_management')),
    currency   text NOT NULL DEFAULT 'USD' CHECK (currency ~ '^[A-Z]{3}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, name),
    -- What the rows below reference, so a row can only name an account of its own user.
    UNIQUE (user_id, id)
);

-- One imported file. The same file (its SHA-256) is imported once per user.
CREATE TABLE portfolio_imports (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     text NOT NULL DEFAULT finq_acting_user() REFERENCES users (id),
    file_name   text NOT NULL,
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    rows        integer NOT NULL CHECK (rows >= 0),
    imported_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, sha256),
    UNIQUE (user_id, id)
);

-- Columns every activity row has: where it came from (the import and its line in the file,
-- the header being line 1), its account, its dates and its effect on the account's cash
-- (`amount`, signed: see shared/portfolio/activity.py).
CREATE TABLE trades (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         text NOT NULL DEFAULT finq_acting_user(),
    import_id       uuid NOT NULL,
    account_id      uuid NOT NULL,
    row             integer NOT NULL CHECK (row >= 1),
    side            text NOT NULL CHECK (side IN ('buy', 'sell')),
    symbol          text NOT NULL REFERENCES instruments (symbol),
    quantity        numeric NOT NULL CHECK (quantity > 0),
    price           numeric NOT NULL CHECK (price >= 0),
    fees            numeric NOT NULL DEFAULT 0 CHECK (fees >= 0),
    amount          numeric NOT NULL,
    currency        text NOT NULL DEFAULT 'USD' CHECK (currency ~ '^[A-Z]{3}$'),
    trade_date      date NOT NULL,
    settlement_date date NOT NULL,
    description     text NOT NULL DEFAULT '',
    UNIQUE (import_id, row),
    FOREIGN KEY (user_id, import_id) REFERENCES portfolio_imports (user_id, id),
    FOREIGN KEY (user_id, account_id) REFERENCES accounts (user_id, id)
);

CREATE TABLE income (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         text NOT NULL DEFAULT finq_acting_user(),
    import_id       uuid NOT NULL,
    account_id      uuid NOT NULL,
    row             integer NOT NULL CHECK (row >= 1),
    kind            text NOT NULL CHECK (kind IN ('dividend', 'interest')),
    symbol          text REFERENCES instruments (symbol),   -- null: interest on cash
    amount          numeric NOT NULL,
    currency        text NOT NULL DEFAULT 'USD' CHECK (currency ~ '^[A-Z]{3}$'),
    trade_date      date NOT NULL,
    settlement_date date NOT NULL,
    description     text NOT NULL DEFAULT '',
    UNIQUE (import_id, row),
    FOREIGN KEY (user_id, import_id) REFERENCES portfolio_imports (user_id, id),
    FOREIGN KEY (user_id, account_id) REFERENCES accounts (user_id, id)
);

CREATE TABLE transfers (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         text NOT NULL DEFAULT finq_acting_user(),
    import_id       uuid NOT NULL,
    account_id      uuid NOT NULL,
    row             integer NOT NULL CHECK (row >= 1),
    kind            text NOT NULL CHECK (kind IN ('deposit', 'withdrawal', 'transfer', 'fee')),
    -- The account that takes a transfer between two of the user's accounts.
    to_account_id   uuid,
    symbol          text REFERENCES instruments (symbol),   -- e.g. a fee on a holding
    amount          numeric NOT NULL,
    currency        text NOT NULL DEFAULT 'USD' CHECK (currency ~ '^[A-Z]{3}$'),
    trade_date      date NOT NULL,
    settlement_date date NOT NULL,
    description     text NOT NULL DEFAULT '',
    UNIQUE (import_id, row),
    CHECK ((kind = 'transfer') = (to_account_id IS NOT NULL)),
    FOREIGN KEY (user_id, import_id) REFERENCES portfolio_imports (user_id, id),
    FOREIGN KEY (user_id, account_id) REFERENCES accounts (user_id, id),
    FOREIGN KEY (user_id, to_account_id) REFERENCES accounts (user_id, id)
);

-- The reads: a user's activity in date order (the ledger's replay), by account or symbol.
CREATE INDEX trades_user_date ON trades (user_id, trade_date);
CREATE INDEX trades_user_symbol ON trades (user_id, symbol, trade_date);
CREATE INDEX trades_user_account ON trades (user_id, account_id, trade_date);
CREATE INDEX income_user_date ON income (user_id, trade_date);
CREATE INDEX income_user_account ON income (user_id, account_id, trade_date);
CREATE INDEX transfers_user_date ON transfers (user_id, trade_date);
CREATE INDEX transfers_user_account ON transfers (user_id, account_id, trade_date);
CREATE INDEX transfers_user_to_account ON transfers (user_id, to_account_id)
    WHERE to_account_id IS NOT NULL;

DO $$
DECLARE
    owned text;
    service_role text;
BEGIN
    -- The user's own rows only, as in migration 013; the owner keeps all of them.
    FOREACH owned IN ARRAY ARRAY['accounts', 'portfolio_imports', 'trades', 'income',
                                 'transfers']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', owned);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', owned);
        EXECUTE format(
            'CREATE POLICY %I ON %I USING (user_id = finq_acting_user()) '
            'WITH CHECK (user_id = finq_acting_user())', owned || '_own_rows', owned);
        EXECUTE format('CREATE POLICY %I ON %I TO CURRENT_USER USING (true) WITH CHECK (true)',
                       owned || '_owner_all', owned);
    END LOOP;

    -- The services' role is granted every table's rows by `ensure_service_role`
    -- (shared/db.py), which `finq up` and `finq migrate` run after the migrations. A
    -- migration run alone (`finq migrate` without the services' DSN) must not leave a role
    -- made earlier unable to use the new tables: every role that may write the questions
    -- table, other than the owner, gets the same on these.
    FOR service_role IN
        SELECT rolname FROM pg_roles
        WHERE rolname <> current_user AND NOT rolsuper AND rolname NOT LIKE 'pg\_%'
          AND has_table_privilege(rolname, 'questions', 'INSERT')
    LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON instruments, accounts, '
                       'portfolio_imports, trades, income, transfers TO %I', service_role);
        EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE trades_id_seq, income_id_seq, '
                       'transfers_id_seq TO %I', service_role);
    END LOOP;
END
$$;

-- The reference list is read by everyone and changed by the owner only (a migration): the
-- services' role holds row privileges on every table, so a policy keeps it from writing.
ALTER TABLE instruments ENABLE ROW LEVEL SECURITY;
ALTER TABLE instruments FORCE ROW LEVEL SECURITY;
CREATE POLICY instruments_read ON instruments FOR SELECT USING (true);
CREATE POLICY instruments_owner_all ON instruments TO CURRENT_USER USING (true) WITH CHECK (true);
