"""The data contract: code, data and models live in the team's part of the shared bucket, mounted at one path.

Every training pod mounts the team's ``shared`` claim (``s3://<shared bucket>/teams/<slug>/`` through the
Mountpoint S3 CSI driver) at :data:`SHARED_MOUNT`; the development environment mounts the same prefix at the same
path, so a path that works in a notebook works in a job.

:func:`resolve` accepts, for a path field:

- a path relative to the mount (``code/train.py``),
- an absolute path under it (``/mnt/shared/code/train.py``),
- an S3 URI inside the team's prefix (``s3://<shared bucket>/teams/<slug>/code/train.py``),

and returns the absolute mount path. Anything else — another bucket, another team's prefix, another absolute
path, or ``..`` climbing out — raises ``FieldProblem("path_outside_shared_bucket")``.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from training.recipes.fields import FieldProblem

#: Where the team's shared prefix is mounted in every pod (and in the development environment).
SHARED_MOUNT = "/mnt/shared"
#: The claim every team namespace has (``clusters.phases.storage.SHARED_VOLUME``).
SHARED_CLAIM = "shared"
OUTSIDE = "path_outside_shared_bucket"


@dataclass(frozen=True)
class SharedBucket:
    """The team's view of the shared bucket: ``bucket`` and the key ``prefix`` (``teams/<slug>/``)."""

    bucket: str
    prefix: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def uri_of(self, mount_path: str) -> str:
        """The S3 URI of a path under :data:`SHARED_MOUNT`."""
        relative = posixpath.relpath(mount_path, SHARED_MOUNT)
        return self.uri if relative == "." else f"{self.uri}{relative}"


def _outside(field: str, value: str, shared: SharedBucket) -> FieldProblem:
    return FieldProblem(OUTSIDE, f"{field} must be in the team's shared bucket: a path under {SHARED_MOUNT} "
                                 f"(or relative to it), or an s3://{shared.bucket}/{shared.prefix}… URI; "
                                 f"got {value!r}.")


def resolve(field: str, value: str, shared: SharedBucket) -> str:
    """The absolute mount path of ``value`` (see the module docstring); raises ``FieldProblem``."""
    text = value.strip()
    if text.startswith("s3://"):
        if not text.startswith(shared.uri) and text.rstrip("/") != shared.uri.rstrip("/"):
            raise _outside(field, value, shared)
        relative = text[len(shared.uri):] if text.startswith(shared.uri) else ""
    elif text.startswith("/"):
        if text != SHARED_MOUNT and not text.startswith(f"{SHARED_MOUNT}/"):
            raise _outside(field, value, shared)
        relative = text[len(SHARED_MOUNT):].lstrip("/")
    elif "://" in text:
        raise _outside(field, value, shared)
    else:
        relative = text
    if any(part == ".." for part in relative.split("/")):
        raise _outside(field, value, shared)
    return posixpath.normpath(posixpath.join(SHARED_MOUNT, relative))

