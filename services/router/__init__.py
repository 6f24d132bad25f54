"""The router stage: what a question asks and which tool calls answer it."""
