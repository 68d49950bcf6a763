"""Service accounts: team-owned identities with API tokens and no password, for CI and agents (docs/identity.md)."""
