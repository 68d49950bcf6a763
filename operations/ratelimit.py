"""A client-side rate limiter for cloud calls, shared by every worker through Redis.

One token bucket per (AWS account, region): ``OPERATIONS_CLOUD_CALLS_PER_SECOND`` tokens a second, up to
``OPERATIONS_CLOUD_CALLS_BURST``. A poll step takes a token before it describes anything. When the bucket is empty
the caller *reserves* the next free slot (the balance goes negative) and is told how long to wait: the engine does
not sleep in the worker but reschedules the operation for that slot and then polls without taking another token.
Callers are thus spread one slot apart instead of retrying together, and a fleet of operations polling one region
stays under AWS's throttling limits instead of provoking them.

When Redis cannot be reached the limiter lets the call through (botocore's adaptive retries still apply) and logs
a warning: a rate limiter must not stop operations.
"""

from __future__ import annotations

import functools
import logging

import redis
from django.conf import settings
from redis.commands.core import Script

logger = logging.getLogger(__name__)

# KEYS[1] bucket; ARGV: rate per second, burst. Returns the seconds until the reserved slot (0: a token was there).
# The balance may go negative: each caller reserves the slot after the previous one. The clock is Redis's own (one
# round trip per take; scripts replicate their effects, so reading TIME before writing is allowed).
_TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate) - 1
local wait = 0
if tokens < 0 then
  wait = -tokens / rate
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('EXPIRE', KEYS[1], math.ceil((burst - tokens) / rate) + 60)
return tostring(wait)
"""


@functools.cache
def _connection() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


@functools.cache
def _script() -> Script:
    return _connection().register_script(_TAKE)


def take(account: str, region: str) -> float:
    """Take one call token for ``account``/``region``: 0.0 when one was there, else the seconds until the slot this
    call reserved (the caller then calls at that time without taking again)."""
    key = f"instantstart:ratelimit:{account}:{region}"
    try:
        wait = _script()(keys=[key], args=[settings.OPERATIONS_CLOUD_CALLS_PER_SECOND,
                                           settings.OPERATIONS_CLOUD_CALLS_BURST])
    except redis.RedisError:
        logger.warning("rate limiter unavailable; letting the call through", exc_info=True)
        return 0.0
    return float(wait)
