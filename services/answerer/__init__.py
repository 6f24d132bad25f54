"""The answerer stage: composes a cited answer from fetched facts."""
