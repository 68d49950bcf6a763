"""What a scheduler config or compute quota's state allows now: the state half of its ``capabilities``. While an
operation works on it (creating, updating, deleting) nothing else changes it (``governance_busy``)."""

from __future__ import annotations

from governance import actions
from governance.models import BUSY_STATES, ComputeQuota, SchedulerConfig


def allows(action: str, row: SchedulerConfig | ComputeQuota) -> bool:
    if action == actions.MANAGE:
        return row.state not in BUSY_STATES
    return True
