"""Exactly one log follower per job across processes: a Redis lease per job.

``SET instantstart:training-logs:lease:<job id> <holder> NX PX <ttl>`` claims it; the holder renews it (compare
and ``PEXPIRE``) well within the TTL and releases it (compare and ``DEL``) when done. A holder that dies loses the
lease after ``LEASE_SECONDS`` and another runner takes the job over, resuming from the stored lines. A holder
that fails to renew (Redis unreachable, or the key taken over after a long stall) must stop following.
"""

from __future__ import annotations

import functools
import logging
import uuid

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

LEASE_SECONDS = 15.0
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


@functools.cache
def _connection() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def lease_key(job_id: int) -> str:
    return f"instantstart:training-logs:lease:{job_id}"


class Lease:
    """The lease on one job's log, held by this object once :meth:`claim` returned True."""

    def __init__(self, job_id: int, *, seconds: float = LEASE_SECONDS):
        self.key = lease_key(job_id)
        self.holder = uuid.uuid4().hex
        self.millis = int(seconds * 1000)

    def claim(self) -> bool:
        try:
            return bool(_connection().set(self.key, self.holder, nx=True, px=self.millis))
        except redis.RedisError:
            logger.warning("could not claim %s", self.key, exc_info=True)
            return False

    def renew(self) -> bool:
        """Extend the lease; False when it is no longer ours (or Redis cannot say)."""
        try:
            return bool(_connection().eval(_RENEW, 1, self.key, self.holder, self.millis))
        except redis.RedisError:
            logger.warning("could not renew %s", self.key, exc_info=True)
            return False

    def release(self) -> None:
        try:
            _connection().eval(_RELEASE, 1, self.key, self.holder)
        except redis.RedisError:
            logger.warning("could not release %s", self.key, exc_info=True)
