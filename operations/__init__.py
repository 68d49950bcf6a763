"""Long-running cloud operations (phases, polling, retries) and request idempotency."""
