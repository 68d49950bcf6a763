"""Permission-matrix cases: placeholder filled by its slice."""

CASES: list = []
