"""Permission-matrix cases of a training job's log endpoints (added to tests.matrix.CASES): members read and download
a job's log; another team gets 404, anonymous 401. The job is a row with a few stored lines (no cloud behind it)."""

from tests.matrix import MEMBERS, Case


def job_with_lines(cast, actor) -> dict:
    from django.utils import timezone

    from tests import factories
    from tests.clusters.sandbox import tracked_hyperpod_cluster
    from training.logs import store
    from training.logs.kubelet import PodLine, to_micros

    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    job = factories.training_job(cluster, "matrix-logs")
    now = to_micros(timezone.now())
    store.append(job.pk, [PodLine(f"matrix-logs-pods-{rank}", rank, now + rank, f"step=1, rank {rank}")
                          for rank in range(2)])
    return {"job_id": job.pk}


CASES = [
    Case("training_job_logs", MEMBERS, params=job_with_lines),
    Case("training_job_logs_download", MEMBERS, params=job_with_lines),
]
