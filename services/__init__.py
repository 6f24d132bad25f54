"""finq's pipeline stages and the `finq` command."""
