"""The sandbox's own control surface: reset hooks shared by the AWS side, the emulator and the simulator.

Each part registers a function that returns it to the empty world; ``reset()`` runs them all (moto's
backends, our extensions' state, the emulator's objects, the fault plan, the request log).
"""

from __future__ import annotations

from collections.abc import Callable

_reset_hooks: list[Callable[[], None]] = []


def on_reset(hook: Callable[[], None]) -> Callable[[], None]:
    """Register ``hook`` (usable as a decorator)."""
    _reset_hooks.append(hook)
    return hook


def reset() -> None:
    for hook in _reset_hooks:
        hook()
