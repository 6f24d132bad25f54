"""The `finq` command: run the servers and services, ingest data, ask questions."""
