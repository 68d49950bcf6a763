"""How a domain app declares a long action: a :class:`Pipeline` of :class:`Phase` steps, registered by ``kind``.

Each phase has a *submit* step (sends the mutation), a *poll* step (reads the world, answers
:meth:`Progress.done` or :meth:`Progress.waiting`, raises :class:`PhaseFailed` when the resource failed) and,
optionally, an undo used when the operation is cancelled: a *compensate* step (sends the undo) and an *undo_poll*
step (answers :class:`Progress` until what the phase made is gone). The engine runs the undo like a forward
phase — polled with backoff, retryable errors retried, bounded by the phase's ``timeout`` — and an undo that cannot
finish fails the phase with ``undo_failed``, so the cancelled operation says what is left. Steps are level-triggered:
the engine may run any step again after a crash, so a step reads the world first and continues from what it
finds. A submit step persists what makes its mutation exactly-once *before* sending it, with
:meth:`StepContext.intend` — the idempotency token where AWS takes one, the deterministic resource name where it
does not — and on a re-run describes the resource and adopts it instead of sending again::

    def submit_eks(ctx):
        name = ctx.intend("cluster_name", lambda: f"demo-{ctx.operation_id}")
        token = ctx.intend("client_request_token", new_token)
        if describe_or_none(name) is None:
            eks.create_cluster(name=name, clientRequestToken=token, ...)
        ctx.record(name=name)

Errors a step raises are judged by the engine: ``PhaseFailed`` and non-retryable ``ApplicationError`` fail the
phase with their code and message (and the provider's details); retryable cloud errors (throttling, 5xx,
unreachable) are retried with backoff until the phase's deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from config import discovery
from config.errors import ApplicationError

if TYPE_CHECKING:
    from operations.context import StepContext

Step = Callable[["StepContext"], None]

#: The ``error_code`` of a cancelled operation whose undo left something behind (``Pipeline.on_finished`` reads it).
UNDO_INCOMPLETE = "undo_incomplete"


@dataclass(frozen=True)
class Progress:
    """What a poll step found: ``done`` or not, the provider's status, and optionally when to look again."""

    done: bool
    status: str = ""
    after: float | None = None

    @classmethod
    def finished(cls, status: str = "") -> Progress:
        return cls(done=True, status=status)

    @classmethod
    def waiting(cls, status: str = "", *, after: float | None = None) -> Progress:
        """Not there yet; ``after`` (seconds) overrides the engine's backoff for the next look."""
        return cls(done=False, status=status, after=after)


class PhaseFailed(ApplicationError):
    """The phase cannot succeed as things are (the resource failed, an input was refused). ``detail`` is kept
    with the phase (e.g. the provider's failure message)."""

    code = "phase_failed"
    status = 409
    default_message = "The phase failed."

    def __init__(self, message: str | None = None, *, code: str | None = None, detail: Mapping[str, Any] | None = None):
        super().__init__(message, code=code)
        self.provider = dict(detail or {})


Poll = Callable[["StepContext"], Progress]


@dataclass(frozen=True)
class Expected:
    """How long a phase's resource takes to get where its poll waits for it, in AWS seconds (documented by AWS or
    measured): never sooner than ``after``, usually by ``within``. The first poll is at ``after``, then one every
    ``every`` seconds until ``within``, then the usual backoff (``operations.schedule``)."""

    after: float
    within: float
    every: float


@dataclass(frozen=True)
class Phase:
    """One phase. ``timeout`` bounds a run of the phase (submit to done) and its undo (compensate to done);
    ``poll_interval`` is the first wait after the submit (or compensate) step, doubled (with jitter, up to
    ``OPERATIONS_POLL_MAX_SECONDS``) while the poll (or undo poll) step waits — unless the phase says more about its
    wait: ``expected`` (how long its resource takes) or ``announced`` (AWS sends the resource's state changes to
    EventBridge, and the submit records the resource's ARN under this key of the phase's reference:
    ``operations.wakeups`` wakes the operation when an event names that ARN, and polls are only the safety net).
    ``settled_by`` maps the detail-types of the events that settle an announced phase's wait to the status it
    finishes with (``{"EKS Addon Creation Succeeded": "ACTIVE"}``): such an event, naming the ARN the phase waits
    on, finishes the phase without a poll — in the drain thread itself (``engine.settle``), not behind the worker's
    queue. Only for events that can mean nothing else (an ARN unique to the creation the phase waits for); any
    other event wakes the phase's poll, which describes the resource.

    Without ``undo_poll`` the undo is done once ``compensate`` returns. ``leftovers`` names what the phase made that
    is still there (``"EKS cluster alpha (CREATING)"``), for the cancelled operation's account of an undo that could
    not finish. ``plan`` says, from the operation's params alone (it may read rows, and AWS and Kubernetes, but never
    write), what the phase would create, change or delete — a list of ``config.plans.change`` — for a dry run's plan.
    """


    slug: str
    title: str
    submit: Step
    poll: Poll
    compensate: Step | None = None
    undo_poll: Poll | None = None
    leftovers: Callable[[StepContext], list[str]] | None = None
    plan: Callable[[Mapping[str, Any]], list[dict[str, Any]]] | None = None
    timeout: timedelta = timedelta(minutes=30)
    poll_interval: float = 5.0
    expected: Expected | None = None
    announced: str = ""
    settled_by: Mapping[str, str] = field(default_factory=dict, hash=False)

    def settled(self, announced: Mapping[str, Any]) -> str | None:
        """The status this phase finishes with on the event kept in its ``announced``; ``None``: it settles nothing."""
        return self.settled_by.get(announced.get("type", "")) if announced else None


@dataclass(frozen=True)
class Pipeline:
    """An ordered list of phases for one ``kind`` of operation.

    ``region`` names the AWS region the steps call (the rate limiter's key). ``remedy`` says, from the operation's
    params, how a user removes what a cancellation could not undo (the button, tool and endpoint); the cancelled
    operation's ``error_message`` ends with it. ``on_finished`` runs inside the
    transaction that makes the operation terminal (succeeded, failed or cancelled), ``on_retried`` inside the one
    that sends a failed operation back to work — both to keep the domain model in step with the operation.
    ``cost`` says, from the params, what the operation adds to the hourly bill ("this adds 2 × ml.p5.48xlarge ≈
    $X/hour, on-demand"; ``None`` when it adds nothing), for its dry-run plan.
    """

    kind: str
    phases: tuple[Phase, ...]
    region: Callable[[Mapping[str, Any]], str] = field(default=lambda params: params["region"])
    remedy: Callable[[Mapping[str, Any]], str] | None = None
    on_finished: Callable[[Any], None] | None = None
    on_retried: Callable[[Any], None] | None = None
    cost: Callable[[Mapping[str, Any]], str | None] | None = None

    def __post_init__(self) -> None:
        slugs = [phase.slug for phase in self.phases]
        if not slugs or len(set(slugs)) != len(slugs):
            raise ValueError(f"{self.kind}: a pipeline needs at least one phase and unique phase slugs.")

    def phase(self, slug: str) -> Phase:
        for phase in self.phases:
            if phase.slug == slug:
                return phase
        raise KeyError(slug)


_PIPELINES: dict[str, Pipeline] = {}


def register(pipeline: Pipeline) -> Pipeline:
    """Make ``pipeline`` runnable. Apps declare theirs in ``<app>/pipelines.py`` (:func:`register_declared`); tests
    register their own."""
    existing = _PIPELINES.get(pipeline.kind)
    if existing is not None and existing is not pipeline:
        raise ValueError(f"A pipeline of kind {pipeline.kind!r} is already registered.")
    _PIPELINES[pipeline.kind] = pipeline
    return pipeline


def register_declared() -> None:
    """Register the ``PIPELINES`` every installed app declares in its ``pipelines`` module."""
    for pipelines in discovery.declared("pipelines", "PIPELINES"):
        for pipeline in pipelines:
            register(pipeline)


def pipeline_for(kind: str) -> Pipeline:
    """The registered pipeline of ``kind`` (``LookupError`` when none is)."""
    try:
        return _PIPELINES[kind]
    except KeyError:
        raise LookupError(f"No pipeline of kind {kind!r} is registered.") from None
