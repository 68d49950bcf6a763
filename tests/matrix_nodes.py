"""Permission-matrix cases of the node slice (added to tests.matrix.CASES)."""

from tests.matrix import Case  # noqa: F401

CASES: list = []
