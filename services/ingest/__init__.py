"""Ingest: SEC XBRL companyfacts into annual metric values with provenance, and the bundled
default dataset that `finq up` loads."""
