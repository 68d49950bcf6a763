"""Objects written into the sandbox's S3 by simulated workloads (a model download Job), not by a client call.

Large objects are *sparse*: their data is a sparse temporary file of the object's size (zeros, no memory and no
disk blocks), their ETag given rather than hashed, so a 16 GB model shard lists, heads and sizes as on S3 without
costing 16 GB. Small ones hold real bytes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from moto.s3.exceptions import MissingBucket
from moto.s3.models import s3_backends

from sandbox.aws.core import ACCOUNT_ID

#: Objects up to this size are written with real bytes.
DENSE_LIMIT = 1 << 20


class NoSuchBucket(Exception):
    """The bucket does not exist."""


def _backend() -> Any:  # moto types its backends loosely
    return s3_backends[ACCOUNT_ID]["aws"]


def put(bucket: str, key: str, size: int, content: bytes | None = None) -> None:
    """Write ``key`` of ``size`` bytes (``content`` when given, else zeros; sparse above :data:`DENSE_LIMIT`)."""
    backend = _backend()
    try:
        if content is not None or size <= DENSE_LIMIT:
            backend.put_object(bucket, key, content if content is not None else bytes(size),
                               disable_notification=True)
            return
        etag = hashlib.md5(f"{bucket}/{key}:{size}".encode(), usedforsecurity=False).hexdigest()
        stored = backend.put_object(bucket, key, b"", etag=etag, disable_notification=True)
    except MissingBucket:
        raise NoSuchBucket(bucket) from None
    with stored.lock:
        stored._value_buffer.rollover()
        stored._value_buffer.truncate(size)
        stored.contentsize = size


def listing(bucket: str, prefix: str) -> list[tuple[str, int]]:
    """``(key, size)`` of every object under ``prefix``, by key."""
    try:
        found = _backend().get_bucket(bucket)
    except MissingBucket:
        raise NoSuchBucket(bucket) from None
    return sorted((key, stored.size) for key, stored in found.keys.items() if key.startswith(prefix))


def exists(bucket: str, key: str) -> bool:
    """Whether ``key`` is an object of ``bucket`` (:class:`NoSuchBucket` when the bucket is not there)."""
    try:
        found = _backend().get_bucket(bucket)
    except MissingBucket:
        raise NoSuchBucket(bucket) from None
    return key in found.keys


def copy(bucket: str, key: str, to_bucket: str, to_key: str) -> None:
    """Copy one object (its size, its bytes when it holds real ones)."""
    stored = _backend().get_object(bucket, key)
    if stored is None:
        raise NoSuchBucket(f"{bucket}/{key}")
    put(to_bucket, to_key, stored.size, stored.value if stored.size <= DENSE_LIMIT else None)
