"""Permission-matrix cases of the diagnostics (added to tests.matrix.CASES): every member may diagnose. The cases
read only rows (a cluster without a HyperPod cluster has no nodes to read; a stored, finished job's record is what
its diagnosis reads), so none needs the sandbox; the diagnoses themselves are tested against it in
tests/clusters/test_diagnostics.py and tests/training/test_diagnostics.py."""

from __future__ import annotations

from tests.matrix import MEMBERS, Case, cluster_in
from tests.matrix_training import stored_job

CASES: list = [
    Case("cluster_nodes_diagnose", MEMBERS, params=cluster_in("active")),
    Case("cluster_creation_diagnose", MEMBERS, params=cluster_in("failed")),
    Case("training_jobs_diagnose", MEMBERS, params=stored_job),
]
