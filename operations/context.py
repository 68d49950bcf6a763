"""What a step sees and may write: :class:`StepContext`.

Everything a step persists goes through the worker's lease (``operations.transitions``), so a worker that lost the
operation to another cannot overwrite what the new holder wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from botocore.client import BaseClient
from django.conf import settings
from django.core.cache import cache

from cloud import aws
from operations import logs, transitions
from operations.models import LogLevel, Operation, OperationPhase

_T = TypeVar("_T")


class StepContext:
    """One step's view of its operation and phase.

    ``params`` is the operation's input; ``outputs`` what earlier phases produced; ``intent`` and ``reference`` the
    phase's persisted intent and provider reference. ``attempt`` is the phase's run number (1, then 2 after a
    retry…), for steps that must not reuse a token across runs.
    """

    def __init__(self, operation: Operation, phase: OperationPhase, *, lease: str, region: str):
        self._operation = operation
        self._phase = phase
        self._lease = lease
        self.region = region

    @property
    def operation_id(self) -> int:
        return self._operation.pk

    @property
    def team_id(self) -> int:
        return self._operation.team_id

    @property
    def actor_id(self) -> int | None:
        """The user who started the operation (``None`` for the system)."""
        return self._operation.created_by_id

    @property
    def params(self) -> Mapping[str, Any]:
        return cast(Mapping[str, Any], self._operation.params)  # a JSON column

    @property
    def outputs(self) -> Mapping[str, Any]:
        return cast(Mapping[str, Any], self._operation.outputs)  # a JSON column

    @property
    def intent(self) -> Mapping[str, Any]:
        return cast(Mapping[str, Any], self._phase.intent)  # a JSON column

    @property
    def reference(self) -> Mapping[str, Any]:
        return cast(Mapping[str, Any], self._phase.reference)  # a JSON column

    @property
    def attempt(self) -> int:
        return self._phase.attempts

    def client(self, service: str) -> BaseClient:
        """A boto3 client for ``service`` in the operation's region."""
        return aws.client(service, region=self.region)

    def shared(self, key: str, read: Callable[[], _T], *, seconds: float) -> _T:
        """``read()``'s answer, shared by every step in this region that asks for ``key`` within ``seconds`` (of AWS
        time: scaled by ``OPERATIONS_POLL_SCALE``): one Describe answers every operation that checks the same
        resource at once. Only for resources many operations share (a network they all use) — never for the state
        of what a phase itself made, which must be read fresh. The answer must be JSON-able (it is kept in Redis).
        With ``OPERATIONS_SHARED_READS`` off every step reads for itself."""
        if not settings.OPERATIONS_SHARED_READS:
            return read()
        cache_key = f"operations.shared.{self.region}.{key}"
        answer: _T | None = cache.get(cache_key)
        if answer is None:
            answer = read()
            cache.set(cache_key, answer, timeout=seconds * settings.OPERATIONS_POLL_SCALE)
        return answer

    def intend(self, name: str, make: Callable[[], _T]) -> _T:
        """The persisted intent ``name``: made with ``make`` and stored *before* the caller uses it, the first
        time; the stored value on every re-run (after a crash, a duplicate delivery, a retry)."""
        if name not in self._phase.intent:
            transitions.save_phase(self._phase, lease=self._lease, intent={**self._phase.intent, name: make()})
        return cast(_T, self._phase.intent[name])  # what make() returned, as stored

    def record(self, **reference: Any) -> None:
        """Store provider references of this phase (ARN, id, provider status)."""
        transitions.save_phase(self._phase, lease=self._lease, reference={**self._phase.reference, **reference})

    def output(self, **values: Any) -> None:
        """Store values later phases (and the operation's readers) need."""
        transitions.save(self._operation, lease=self._lease, outputs={**self._operation.outputs, **values})

    def log(self, message: str, *, level: str = LogLevel.INFO) -> None:
        logs.append(self._operation.pk, message, phase=self._phase.slug, level=level)
