"""An ``Idempotency-Key`` names the operation it started, once per team.

REST replays a repeated request of the same user from its stored response (``config.api.idempotency``). Behind every
face, a service that starts an operation asks :func:`replayed` first: a key the team already used — by another
member, from another face, or after the stored response expired — answers with what that operation started instead
of starting a second one. ``operations.services.operation_start`` enforces the same key rule for the row itself.
"""

from __future__ import annotations

from accounts.models import Team
from config import plans
from operations.models import Operation


def replayed(team: Team, key: str | None) -> Operation | None:
    """The operation that ``key`` already started in ``team``; ``None`` without a key or for a key the team has not
    used. Services call it after authorizing and before any other check, and return what that operation started; the
    same key in another team is another request. A dry run (``config.plans``) uses no key: ``None``."""
    if not key or plans.active():  # a dry run neither consumes nor replays a key
        return None
    return Operation.objects.filter(team=team, idempotency_key=key).first()
