"""Human approval of destructive agent actions: a team's policy, the requests an agent's MCP calls are held as, and
their exactly-once replay as the requester once a team admin approves (docs/agent.md)."""
