"""Operations state: long cloud actions as persisted, polled phases, and ``Idempotency-Key`` records.

An :class:`Operation` moves through these states; every change goes through ``operations.transitions`` (one
compare-and-set helper), so a transition not listed here is a ``Conflict``, never a silent overwrite::

    pending ──► running ──► succeeded
       │           │  ▲
       │           │  └──── failed      (retry: only the failed phase is reset)
       │           ├──────► failed
       │           └──────► cancelling ──► cancelled
       ├──────────────────────────────────► failed      (no worker can run its kind)
       └──────────────────────────────────► cancelled   (cancelled before a worker picked it up)

``succeeded`` and ``cancelled`` are final. ``failed`` is terminal (no worker touches it) but not final: a retry
moves it back to ``running``.

An :class:`OperationPhase` moves ``pending → running → succeeded | failed``; a retry moves ``failed → running``.
Cancellation moves a phase that never started ``pending → cancelled``; a phase that started and has an undo step
``running | failed | succeeded → undoing``, then ``undoing → compensated`` once its undo reached its end, or
``undoing → failed`` (``undo_failed``) when the undo could not finish; a started phase without an undo step that
had not succeeded becomes ``cancelled``. Within ``running`` and ``undoing`` the phase's ``step`` says whether its
mutation still has to be sent (``submit``) or is being watched (``poll``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from config.context import Source


class OperationState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLING = "cancelling", "Cancelling"
    CANCELLED = "cancelled", "Cancelled"


#: States a worker still advances.
ACTIVE_STATES = frozenset({OperationState.PENDING, OperationState.RUNNING, OperationState.CANCELLING})
#: States no worker advances (``failed`` may still be retried).
TERMINAL_STATES = frozenset({OperationState.SUCCEEDED, OperationState.FAILED, OperationState.CANCELLED})

#: The allowed operation transitions (from → to).
OPERATION_TRANSITIONS: dict[str, frozenset[str]] = {
    OperationState.PENDING: frozenset({OperationState.RUNNING, OperationState.FAILED, OperationState.CANCELLED}),
    OperationState.RUNNING: frozenset({OperationState.SUCCEEDED, OperationState.FAILED, OperationState.CANCELLING}),
    OperationState.FAILED: frozenset({OperationState.RUNNING}),
    OperationState.CANCELLING: frozenset({OperationState.CANCELLED}),
    OperationState.SUCCEEDED: frozenset(),
    OperationState.CANCELLED: frozenset(),
}


class PhaseState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    UNDOING = "undoing", "Undoing"
    COMPENSATED = "compensated", "Undone"


class PhaseStep(models.TextChoices):
    SUBMIT = "submit", "Submit"
    POLL = "poll", "Poll"


#: The allowed phase transitions (from → to).
PHASE_TRANSITIONS: dict[str, frozenset[str]] = {
    PhaseState.PENDING: frozenset({PhaseState.RUNNING, PhaseState.CANCELLED}),
    PhaseState.RUNNING: frozenset({PhaseState.SUCCEEDED, PhaseState.FAILED, PhaseState.CANCELLED,
                                   PhaseState.UNDOING}),
    PhaseState.FAILED: frozenset({PhaseState.RUNNING, PhaseState.CANCELLED, PhaseState.UNDOING}),
    PhaseState.SUCCEEDED: frozenset({PhaseState.UNDOING}),
    PhaseState.UNDOING: frozenset({PhaseState.COMPENSATED, PhaseState.FAILED}),
    PhaseState.CANCELLED: frozenset(),
    PhaseState.COMPENSATED: frozenset(),
}


class Operation(models.Model):
    """One long cloud action of a team, made of the phases its pipeline (``kind``) declares.

    ``params`` is the pipeline's input, fixed at creation; ``outputs`` is what phases found or made (ids, ARNs),
    shared with later phases. ``claimed_by``/``heartbeat_at`` are the worker lease: only the holder writes step
    outcomes, and a lease whose heartbeat is older than ``OPERATIONS_CLAIM_LEASE`` may be taken over.
    ``next_poll_at`` is when a worker should look again; ``deadline_at`` is the current phase's deadline;
    ``call_reserved`` says the next poll already holds a slot of the cloud-call rate limiter.
    """

    team = models.ForeignKey("accounts.Team", on_delete=models.PROTECT, related_name="operations")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    source = models.CharField(max_length=10, choices=Source.choices)
    kind = models.CharField(max_length=60)
    title = models.CharField(max_length=200)
    target_type = models.CharField(max_length=60, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    params = models.JSONField(default=dict, blank=True)
    outputs = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=12, choices=OperationState.choices, default=OperationState.PENDING)
    phase = models.CharField(max_length=60, blank=True)
    status_reason = models.CharField(max_length=500, blank=True)
    error_code = models.CharField(max_length=60, blank=True)
    error_message = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=255, blank=True)
    cancel_requested = models.BooleanField(default=False)
    call_reserved = models.BooleanField(default=False)
    attempt = models.PositiveIntegerField(default=1)
    claimed_by = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    next_poll_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "-created_at"], name="operation_team_created"),
            models.Index(fields=["state", "next_poll_at"], name="operation_state_poll"),
            models.Index(fields=["target_type", "target_id"], name="operation_target"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["team", "idempotency_key"], name="operation_unique_team_key",
                                    condition=~models.Q(idempotency_key="")),
        ]

    def __str__(self) -> str:
        return f"{self.title} [{self.state}]"

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


class OperationPhase(models.Model):
    """One declared phase of an operation, in pipeline order.

    ``intent`` holds what the submit step persisted before sending its mutation (idempotency token, deterministic
    name); ``reference`` what the provider answered (ARN, id, status). ``attempts`` counts runs of the phase
    (1 + retries), ``polls`` the poll steps of the current run; ``error_detail`` keeps the provider's code, message
    and request id.
    """

    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="phases")
    index = models.PositiveSmallIntegerField()
    slug = models.CharField(max_length=60)
    title = models.CharField(max_length=200)
    state = models.CharField(max_length=12, choices=PhaseState.choices, default=PhaseState.PENDING)
    step = models.CharField(max_length=6, choices=PhaseStep.choices, default=PhaseStep.SUBMIT)
    attempts = models.PositiveIntegerField(default=0)
    polls = models.PositiveIntegerField(default=0)
    intent = models.JSONField(default=dict, blank=True)
    reference = models.JSONField(default=dict, blank=True)
    status_reason = models.CharField(max_length=500, blank=True)
    error_code = models.CharField(max_length=60, blank=True)
    error_message = models.TextField(blank=True)
    error_detail = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    #: The ARN of the resource a running ``announced`` phase waits for (``operations.wakeups``); blank otherwise
    #: (``transitions.move_phase`` clears it as the phase leaves ``running``), so the index holds only live waits.
    waits_on = models.CharField(max_length=400, blank=True, db_index=True)
    #: The latest state-change event that named ``waits_on`` while the phase waited, as the drain took it off the
    #: queue — ``{"type": <detail-type>, "detail": {...}}`` — which finishes the phase without a poll where its
    #: pipeline says it settles the wait (``Phase.settled_by``); ``{}`` otherwise, and cleared with ``waits_on``.
    announced = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["operation", "index"]
        constraints = [
            models.UniqueConstraint(fields=["operation", "index"], name="phase_unique_index"),
            models.UniqueConstraint(fields=["operation", "slug"], name="phase_unique_slug"),
        ]

    def __str__(self) -> str:
        return f"{self.slug} [{self.state}]"


class LogLevel(models.TextChoices):
    INFO = "info", "Info"
    WARNING = "warning", "Warning"
    ERROR = "error", "Error"


class OperationLog(models.Model):
    """An append-only line of an operation's log; ``seq`` counts from 1 per operation."""

    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="logs")
    seq = models.PositiveIntegerField()
    phase = models.CharField(max_length=60, blank=True)
    level = models.CharField(max_length=8, choices=LogLevel.choices, default=LogLevel.INFO)
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["operation", "seq"]
        constraints = [models.UniqueConstraint(fields=["operation", "seq"], name="operation_log_unique_seq")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.message[:60]}"


class IdempotencyRecord(models.Model):
    """One ``Idempotency-Key`` use by one user.

    States: in progress (``status_code`` null, the request is executing) → completed (the 2xx response
    is stored and replayed). A request that did not succeed deletes its record so the key can be reused.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_unique_user_key")]

    def __str__(self) -> str:
        return f"{self.method} {self.path} [{self.key}]"


class ApprovalState(models.TextChoices):
    """pending → approved → executed | failed, or pending → rejected. ``approved`` lasts while the action replays
    (one approver won the conditional update); ``failed`` means the replay was refused (the requester lost the
    right, the object changed). A pending request past ``expires_at`` is ``expired`` (never stored: see
    ``ApprovalRequest.current_state``) and can no longer be decided."""

    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved, running"
    EXECUTED = "executed", "Executed"
    FAILED = "failed", "Failed"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"


#: States in which nothing will change the request any more.
APPROVAL_FINAL_STATES = frozenset({ApprovalState.EXECUTED, ApprovalState.FAILED, ApprovalState.REJECTED,
                                   ApprovalState.EXPIRED})


class ApprovalPolicy(models.Model):
    """A team's approval setting: which approvable actions (``operations.approvals.approvable_actions``) need a
    team admin's approval when requested through MCP, and how long a request waits. A team without a row uses
    the defaults (every action its app marks as approval-required by default, 24 hours)."""

    team = models.OneToOneField("accounts.Team", on_delete=models.CASCADE, related_name="approval_policy")
    actions = models.JSONField(default=list, blank=True)
    ttl_hours = models.PositiveIntegerField(default=24)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"approval policy of {self.team}"


class ApprovalRequest(models.Model):
    """An agent's request for an action its team's policy holds for approval: the REST call it made (method, path,
    JSON body — never a secret: bodies with secret-named fields are refused) to replay as ``requested_by`` once a
    team admin approves it. States: :class:`ApprovalState`."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="approval_requests")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=60)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    body = models.JSONField(default=dict, blank=True)
    target_type = models.CharField(max_length=60)
    target_id = models.CharField(max_length=64)
    target_repr = models.CharField(max_length=200)
    state = models.CharField(max_length=10, choices=ApprovalState.choices, default=ApprovalState.PENDING)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=1000, blank=True)
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    error_code = models.CharField(max_length=60, blank=True)
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    #: Whether the viewer may decide it now, put on each request by the approvals page; not a column.
    can_decide: bool

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["team", "state", "expires_at"], name="approval_team_state")]

    def __str__(self) -> str:
        return f"{self.action} {self.target_repr} by {self.requested_by_id} [{self.state}]"

    @property
    def current_state(self) -> ApprovalState:
        if self.state == ApprovalState.PENDING and self.expires_at <= timezone.now():
            return ApprovalState.EXPIRED
        return ApprovalState(self.state)
