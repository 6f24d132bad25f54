"""The validator stage: checks a drafted answer against its fetched facts."""
