"""Pytest plugin (``-p tests.reliability.plugin`` in ``pyproject.toml``): the reliability suite's command-line option.

It lives in a plugin rather than ``tests/reliability/conftest.py`` because pytest only reads ``pytest_addoption``
from conftest files it loads at start-up, and a plain ``pytest`` run does not load that one early enough.
"""

from __future__ import annotations

import os

#: Kill-the-worker trials in a default run (CI, ``make test``); more with the option or the variable.
DEFAULT_TRIALS = 3
TRIALS_VARIABLE = "INSTANTSTART_RELIABILITY_TRIALS"


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--reliability-trials", type=int, default=None, metavar="N",
        help=f"kill-the-worker trials in tests/reliability (default ${TRIALS_VARIABLE} or {DEFAULT_TRIALS})",
    )
    parser.addoption(
        "--reliability-seed", type=int, default=None, metavar="SEED",
        help="seed of the reliability suite's random kill instants (default: a fresh one, printed on failure)",
    )


def trials(config) -> int:
    value = config.getoption("--reliability-trials")
    if value is None:
        value = int(os.environ.get(TRIALS_VARIABLE) or DEFAULT_TRIALS)
    return max(1, value)
