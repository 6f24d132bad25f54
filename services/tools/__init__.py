"""The tools stage: runs a route's whitelisted tool calls against Postgres."""
