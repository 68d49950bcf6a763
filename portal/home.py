"""The team's home (the dashboard) is assembled from panels the apps declare, so ``accounts`` (which owns the page)
needs to import none of them: each app may have ``<app>/home.py`` with ``HOME_PANELS``, a list of functions
``panel(actor, team) -> HomePanel``, found by ``config.discovery`` like ``usage.py``.

A panel reads through its app's selectors with a fixed number of queries (no query per row), renders its own
template with its own context, and lists what needs the team's attention (failed operations, groups short of
instances, pending approvals…); the dashboard shows every panel's attention items together at the top.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from accounts.models import Team, User


@dataclass(frozen=True)
class Attention:
    """One thing that needs someone: what (``text``), where to act (``url``), and ``level`` ``bad`` or ``warn``."""

    text: str
    url: str
    level: str = "warn"


@dataclass(frozen=True)
class HomePanel:
    """A section of the team's home: ``template`` rendered with ``context`` (plus the page's), placed by ``order``
    (smaller first), ``wide`` panels spanning the page."""

    template: str
    context: dict[str, Any]
    order: int = 100
    wide: bool = False
    attention: list[Attention] = field(default_factory=list)


#: What ``<app>/home.py`` lists in ``HOME_PANELS``.
PanelSource = Callable[[User, Team], HomePanel]
