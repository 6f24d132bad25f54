-- Which bundled dataset a database holds: `finq up` loads the bundled dataset once per
-- version (its MANIFEST.json digest), so an upgrade brings new figures into an existing
-- database without reloading on every start.
CREATE TABLE dataset_loads (
    manifest_sha256 text PRIMARY KEY,
    loaded_at       timestamptz NOT NULL DEFAULT now(),
    counts          jsonb NOT NULL
);
