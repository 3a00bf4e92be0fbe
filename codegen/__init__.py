"""Developer tooling around the canonical schemas: lint, regenerate, drift-check."""
