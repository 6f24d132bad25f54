-- Who is asking: users and their API keys. A key is shown once, when it is made, and kept
-- only as its SHA-256 (keys are 32 random bytes, so a fast hash cannot be brute-forced);
-- the prefix tells keys apart in `finq users list` without revealing them.
CREATE TABLE users (
    id          text PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    key_sha256  text UNIQUE,                 -- null for the local user, who has no key
    key_prefix  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- The one user of a local `finq up`: requests without a key act as this user when
-- FINQ_AUTH=local. Rows written before identity existed were the single "anonymous" user.
INSERT INTO users (id, name) VALUES ('local', 'local');
UPDATE questions SET user_id = 'local' WHERE user_id = 'anonymous';
UPDATE conversations SET user_id = 'local' WHERE user_id = 'anonymous';
UPDATE query_log SET user_id = 'local' WHERE user_id = 'anonymous';
UPDATE documents SET user_id = 'local' WHERE user_id = 'anonymous';
