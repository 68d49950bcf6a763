"""Permission-matrix cases of cost estimates (added to tests.matrix.CASES): any member of a team may ask."""

from tests.matrix import MEMBERS, Case


def _estimate(cast, actor) -> dict:
    return {"team": cast.team.pk, "region": "us-west-2", "instances": "ml.g5.8xlarge:2"}


CASES = [
    Case("estimates_retrieve", MEMBERS, params=_estimate, sandbox=True),
]
