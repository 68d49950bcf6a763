"""Dry-run plans: what a change would do, answered instead of doing it.

A dry run (:func:`previewing`) runs a change's whole path — authorization, validation, state rules, the AWS and
Kubernetes reads the real call makes — while every AWS and Kubernetes write is withheld (:mod:`cloud.dry_run`); the
caller rolls back every database write (:func:`run` runs the action in a transaction it never commits).
It ends in one of three ways, each answered as a :func:`plan`:

* the service reaches the point where it would start its operation: ``operations.services.operation_start`` raises
  :class:`PlanReady` with the operation's phases and what each would create, change or delete;
* the service would send a write itself (a pod relabelled, a model called): the withheld write is the change;
* the request completes: it changed only InstantStart's own records, and the changes are what the audit trail would
  have recorded (``accounts.audit.record`` calls :func:`note`).

A change is ``{"action", "provider", "kind", "name", "detail"}``: ``action`` is ``create``, ``update``, ``delete``
or ``call`` (a request sent as it is); ``provider`` is ``aws``, ``kubernetes`` or ``instantstart``.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import transaction

from cloud import dry_run

Change = dict[str, Any]
Result = TypeVar("Result")
PROVIDERS = ("aws", "kubernetes", "instantstart")
ACTIONS = ("create", "update", "delete", "call")


def change(action: str, provider: str, kind: str, name: str = "", **detail: Any) -> Change:
    """One planned change (``ValueError`` for an unknown action or provider)."""
    if action not in ACTIONS or provider not in PROVIDERS:
        raise ValueError(f"A change is one of {ACTIONS} on one of {PROVIDERS}, not {action!r} on {provider!r}.")
    return {"action": action, "provider": provider, "kind": kind, "name": name, "detail": _jsonable(detail)}


def aws_call(action: str, kind: str, name: str, *, call: str, request: dict[str, Any], **detail: Any) -> Change:
    """A change one AWS call makes: ``detail.call`` names it (``eks:CreateAddon``) and ``detail.request`` holds the
    parameters the real run sends, rendered by the same builder the step uses. Values only the real run knows
    (a ``clientRequestToken`` it persists, the ARN of something an earlier phase creates) are ``<…>`` placeholders."""
    return change(action, "aws", kind, name, call=call, request=request, **detail)


def kubernetes_object(action: str, manifest: dict[str, Any], **detail: Any) -> Change:
    """A change of one Kubernetes object: ``kind`` and ``namespace/name`` from ``manifest`` (the object as JSON,
    rendered by the same builder the step applies), and ``detail.manifest`` the object as it would be sent."""
    meta = manifest.get("metadata") or {}
    name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name", ""))
    return change(action, "kubernetes", str(manifest.get("kind", "")), name, manifest=manifest, **detail)


class PlanReady(BaseException):
    """Raised where a dry run's real call would start its operation; carries the operation's plan
    (``{"kind", "title", "phases": [{"slug", "title", "changes"}]}``). A ``BaseException``, like
    ``cloud.dry_run.WriteWithheld``, so that no ``except Exception`` on its way up to the dry run can swallow it;
    every transaction it leaves rolls back."""

    def __init__(self, operation: dict[str, Any]):
        super().__init__(operation.get("kind", "operation"))
        self.operation = operation


@dataclass
class Preview:
    """What one dry run collected: the records the audit trail would have written."""

    records: list[Change] = field(default_factory=list)


_preview: contextvars.ContextVar[Preview | None] = contextvars.ContextVar("instantstart_preview", default=None)


def active() -> bool:
    """True inside :func:`previewing`: services and helpers must not make anything happen outside the database."""
    return _preview.get() is not None


@contextlib.contextmanager
def previewing() -> Iterator[Preview]:
    """A dry run in this context: AWS and Kubernetes writes withheld, audit records collected. The caller owns the
    database transaction and rolls it back."""
    preview = Preview()
    token = _preview.set(preview)
    try:
        with dry_run.withholding():
            yield preview
    finally:
        _preview.reset(token)


def run(action: Callable[[], Result]) -> tuple[Result | None, dict[str, Any]]:
    """Run ``action`` as a dry run (:func:`previewing`) inside a database transaction that is always rolled back.

    Answers ``(None, plan)`` when the action reached the start of its operation or a withheld write, else ``(its
    result, the plan of the records it would have written)`` — the caller decides whether that result is a refusal.
    An exception the action raises (a refusal) propagates, after the rollback."""
    with previewing() as preview:
        try:
            with transaction.atomic():
                try:
                    return action(), plan(preview)
                finally:
                    transaction.set_rollback(True)
        except PlanReady as ready:
            return None, plan(preview, operation=ready.operation)
        except dry_run.WriteWithheld as withheld:
            return None, plan(preview, withheld=withheld.change)


def note(*, action: str, target: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Record, in the current dry run (if any), the audit event a change would write."""
    preview = _preview.get()
    if preview is not None:
        made = "create" if not before else "delete" if not after else "update"
        preview.records.append(change(made, "instantstart", action, target, before=before, after=after))


def plan(preview: Preview, *, operation: dict[str, Any] | None = None,
         withheld: Change | None = None) -> dict[str, Any]:
    """The body a dry run answers: ``dry_run`` (always true), a ``summary`` sentence (ending with what the operation
    adds to the hourly bill, when its pipeline says), the ``operation`` that would start (or ``None``) and
    ``changes``: every change the operation's phases plan, the write a service would have
    sent, and the records it would have written."""
    changes = [item for phase in (operation or {}).get("phases", []) for item in phase["changes"]]
    changes += ([_jsonable(withheld)] if withheld else []) + preview.records
    if operation is not None:
        titles = ", ".join(phase["title"] for phase in operation["phases"])
        summary = f"Would start operation {operation['title']!r} ({operation['kind']}): {titles}."
        if operation.get("cost"):
            summary += f" {operation['cost']}"
    elif withheld is not None:
        summary = f"Would send {withheld['kind']} {withheld['name']}".rstrip() + " to " + (
            "AWS." if withheld["provider"] == "aws" else "the cluster's Kubernetes API.")
    else:
        summary = f"Would change {len(changes)} InstantStart record(s)." if changes else "Would change nothing."
    return {"dry_run": True, "summary": f"DRY RUN, nothing was changed. {summary}", "operation": operation,
            "changes": changes}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
