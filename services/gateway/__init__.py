"""The gateway: HTTP in, question onto the bus, validated answer out."""
