"""An S3-compatible object server for tests and the dev stack's artifact repository (docs/kubesim.md,
"The artifact repository"): `stores` keeps objects, `sigv4` checks signatures, `server` speaks HTTP."""
