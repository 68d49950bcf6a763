"""Permission-matrix cases of the feature slice (added to tests.matrix.CASES)."""

from tests.matrix import Case  # noqa: F401

CASES: list = []
