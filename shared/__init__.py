"""finq's common library: contracts, subjects, bus, telemetry, logging, settings, db."""
