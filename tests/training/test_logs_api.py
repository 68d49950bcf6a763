"""The REST log endpoints: pages by ``seq``, the tail, rank and time filters, parameter checks, the streamed text
download, and who may read them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests import factories
from training.logs import store
from training.logs.kubelet import PodLine, to_micros
from training.models import TrainingJob

pytestmark = pytest.mark.django_db

START = to_micros(timezone.now().replace(microsecond=0))


@pytest.fixture
def job(cast):
    job = factories.training_job(factories.cluster(cast.team, "c"))
    store.append(job.pk, [PodLine(f"llama-pods-{index % 3}", index % 3, START + index * 1_000_000, f"line {index}")
                          for index in range(30)])
    return job


def url(job, suffix: str = "") -> str:
    return f"/api/v1/training-jobs/{job.pk}/logs{suffix}"


def test_pages_by_seq_until_the_end(api, cast, job):
    client = api(cast.viewer, read_only=True)
    body = client.get(url(job), limit=12).json()
    assert [line["seq"] for line in body["lines"]] == list(range(1, 13))
    assert body["lines"][0] == {"seq": 1, "rank": 0, "pod": "llama-pods-0",
                                "at": store.iso(PodLine("", 0, START, "").at), "text": "line 0"}
    assert (body["next_seq"], body["last_seq"], body["complete"]) == (12, 30, False)
    rest = client.get(url(job), after_seq=body["next_seq"]).json()
    assert [line["seq"] for line in rest["lines"]] == list(range(13, 31))
    assert client.get(url(job), after_seq=30).json() == {"lines": [], "next_seq": 30, "last_seq": 30,
                                                         "complete": False}


def test_tail_rank_and_since(api, cast, job):
    client = api(cast.viewer)
    assert [line["seq"] for line in client.get(url(job), tail=4).json()["lines"]] == [27, 28, 29, 30]
    by_rank = client.get(url(job), rank=2, limit=3).json()
    assert [line["seq"] for line in by_rank["lines"]] == [3, 6, 9]
    assert by_rank["next_seq"] == 9
    assert [line["seq"] for line in client.get(url(job), rank=1, tail=2).json()["lines"]] == [26, 29]
    since = (PodLine("", 0, START, "").at + timedelta(seconds=25)).isoformat().replace("+00:00", "Z")
    assert [line["text"] for line in client.get(url(job), since=since).json()["lines"]] == [
        f"line {index}" for index in range(25, 30)]


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 1001}, {"after_seq": -1}, {"rank": "x"},
                                    {"since": "yesterday"}, {"tail": 0}])
def test_bad_parameters_are_field_errors(api, cast, job, params):
    response = api(cast.viewer).get(url(job), **params)
    assert response.status_code == 400
    assert response.json()["code"] == "validation_failed"
    assert set(response.json()["fields"]) == set(params)


def test_download_streams_the_whole_log_as_text(api, cast, job):
    response = api(cast.viewer).get(url(job, "/download"))
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="llama.log"'
    text = b"".join(response.streaming_content).decode().splitlines()
    assert len(text) == 30
    assert text[4] == f"[rank 1] {store.iso(PodLine('', 0, START + 4_000_000, '').at)} line 4"

    one_rank = api(cast.viewer).get(url(job, "/download"), rank=2)
    assert one_rank["Content-Disposition"] == 'attachment; filename="llama-rank2.log"'
    assert [line.split("] ")[0] for line in b"".join(one_rank.streaming_content).decode().splitlines()] == \
        ["[rank 2"] * 10


def test_download_reads_the_store_in_chunks(job, django_assert_max_num_queries):
    from training.api.log_views import download_lines

    with django_assert_max_num_queries(1):
        chunks = list(download_lines(job.pk, None))
    assert sum(chunk.count("\n") for chunk in chunks) == 30
    assert [line.seq for line in store.iterate(job.pk, chunk=7)] == list(range(1, 31))


def test_other_teams_and_anonymous_are_refused(api, cast, job):
    for suffix in ("", "/download"):
        assert api(cast.outsider).get(url(job, suffix)).status_code == 404
        assert api(None).get(url(job, suffix)).status_code == 401
        assert api(cast.viewer).get(f"/api/v1/training-jobs/999999/logs{suffix}").status_code == 404


def test_the_page_reports_completion(api, cast, job):
    TrainingJob.objects.filter(pk=job.pk).update(state="succeeded")
    store.mark_complete(job.pk)
    assert api(cast.viewer).get(url(job), after_seq=30).json()["complete"] is True


def test_download_ignores_accept_and_answers_errors_in_json(api, cast, job):
    viewer, outsider = api(cast.viewer), api(cast.outsider)
    assert viewer.client.get(url(job, "/download"), HTTP_ACCEPT="text/plain", **viewer.headers).status_code == 200
    refused = outsider.client.get(url(job, "/download"), {"format": "txt"}, HTTP_ACCEPT="text/plain",
                                  **outsider.headers)
    assert (refused.status_code, refused["Content-Type"]) == (404, "application/json")
    assert refused.json()["code"] == "not_found"
