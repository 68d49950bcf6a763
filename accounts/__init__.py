"""Users, teams, memberships and roles, API tokens, the permission module and the audit trail."""
