"""Presigned uploads into the team's part of the shared bucket: REST signs (operators, audited), the file goes
straight to the sandbox's S3 by POST form or PUT, a path leaving the team's folder is refused on every face, and the
uploaded script is then accepted at submit."""

from __future__ import annotations

import httpx
from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent
from cloud import aws
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from mcp_server.testing import call_tool
from tests import factories
from training import shared_files

UPLOADS = "/api/v1/clusters/{}/shared-files/uploads"


def test_upload_by_post_and_put_lands_in_the_team_prefix(cast, api, token_for, sandbox):
    cluster = factories.cluster(cast.team)
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    assert not shared_files.file_exists(cluster, "/mnt/shared/code/train.py")

    signed = api(cast.operator).post(UPLOADS.format(cluster.pk), {"path": "code/train.py"})
    assert signed.status_code == 200, signed.content
    body = signed.json()
    assert (body["bucket"], body["key"], body["path"]) == \
        (bucket, f"{team_prefix(cast.team.slug)}code/train.py", "/mnt/shared/code/train.py")
    posted = httpx.post(body["url"], data=body["fields"], files={"file": ("train.py", b"print('posted')\n")})
    assert posted.status_code in (200, 204), posted.text
    assert shared_files.file_exists(cluster, "/mnt/shared/code/train.py")

    is_error, again = call_tool(token_for(cast.operator), "upload_shared_file",
                                {"cluster_id": cluster.pk, "path": "/mnt/shared/data/small.txt"})
    assert not is_error
    assert httpx.put(again["put_url"], content=b"hello").status_code == 200
    stored = aws.client("s3", region=cluster.region).get_object(Bucket=bucket, Key=again["key"])
    assert stored["Body"].read() == b"hello"
    assert AuditEvent.objects.filter(action="shared_file.upload", team=cast.team).count() == 2


def test_paths_leaving_the_team_folder_are_refused_on_rest_and_mcp(cast, api, token_for, sandbox):
    cluster = factories.cluster(cast.team)
    outside = "path_outside_shared_bucket"
    for path, code in [("../other-team/x.py", outside), ("/etc/passwd", outside), ("code/", "required")]:
        rest = api(cast.operator).post(UPLOADS.format(cluster.pk), {"path": path})
        assert rest.status_code == 400 and rest.json()["fields"]["path"][0]["code"] == code
        is_error, body = call_tool(token_for(cast.operator), "upload_shared_file", {"cluster_id": cluster.pk,
                                                                                    "path": path})
        assert is_error and body == rest.json()
    assert api(cast.viewer).post(UPLOADS.format(cluster.pk), {"path": "x.py"}).status_code == 403
    assert not AuditEvent.objects.filter(action="shared_file.upload").exists()


def test_portal_signs_uploads_for_operators_only(cast, sandbox):
    cluster = factories.cluster(cast.team)
    ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    operator, viewer = Client(), Client()
    operator.force_login(cast.operator)
    viewer.force_login(cast.viewer)
    browse = reverse("training-shared-files", args=[cluster.pk])
    assert 'data-testid="browser-upload"' in operator.get(browse, {"target": "cfg-script"}).content.decode()
    assert 'data-testid="browser-upload"' not in viewer.get(browse, {"target": "cfg-script"}).content.decode()
    upload = reverse("training-shared-upload", args=[cluster.pk])
    signed = operator.post(upload, {"path": "/mnt/shared/code/train.py"})
    assert signed.status_code == 200 and signed.json()["path"] == "/mnt/shared/code/train.py"
    refused = operator.post(upload, {"path": "../x.py"})
    assert refused.status_code == 400 and refused.json()["fields"]["path"][0]["code"] == "path_outside_shared_bucket"
    assert viewer.post(upload, {"path": "x.py"}).status_code == 403


def test_the_submit_page_lets_the_browser_reach_s3(cast, sandbox):
    cluster = factories.cluster(cast.team)
    operator = Client()
    operator.force_login(cast.operator)
    page = operator.get(reverse("training-job-submit"), {"recipe": "pytorch", "cluster": cluster.pk})
    origin = shared_files.upload_origins(cluster.region)[0]
    assert origin.startswith("http://127.0.0.1:") or origin.startswith("http://localhost:")
    assert f"connect-src 'self' {origin};" in page["Content-Security-Policy"]
    assert "connect-src 'self';" in operator.get(reverse("training-jobs"))["Content-Security-Policy"]


MULTIPART = "/api/v1/clusters/{}/shared-files/multipart-uploads"


def test_a_large_file_goes_up_in_signed_parts_and_lands_whole(cast, api, sandbox, monkeypatch):
    monkeypatch.setattr(shared_files, "PART_BYTES", shared_files.MIN_PART_BYTES)
    cluster = factories.cluster(cast.team)
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    data = bytes(range(256)) * (shared_files.MIN_PART_BYTES // 256) + b"tail"
    operator = api(cast.operator)

    started = operator.post(MULTIPART.format(cluster.pk), {"path": "data/shard.bin", "size": len(data)})
    assert started.status_code == 200, started.content
    body = started.json()
    assert (body["key"], body["part_size"]) == (f"{team_prefix(cast.team.slug)}data/shard.bin",
                                                shared_files.MIN_PART_BYTES)
    assert [(part["number"], part["bytes"]) for part in body["parts"]] == [(1, shared_files.MIN_PART_BYTES), (2, 4)]
    sent = []
    for part in body["parts"]:
        start = (part["number"] - 1) * body["part_size"]
        answer = httpx.put(part["url"], content=data[start:start + part["bytes"]])
        assert answer.status_code == 200, answer.text
        sent.append({"number": part["number"], "etag": answer.headers["ETag"]})

    wrong = operator.post(MULTIPART.format(cluster.pk) + "/complete", {
        "path": "data/shard.bin", "upload_id": body["upload_id"], "parts": [{**sent[0], "etag": '"0"'}, sent[1]]})
    assert wrong.status_code == 400 and wrong.json()["fields"]["parts"][0]["code"] == "invalid_part"
    done = operator.post(MULTIPART.format(cluster.pk) + "/complete",
                         {"path": "data/shard.bin", "upload_id": body["upload_id"], "parts": sent[::-1]})
    assert done.status_code == 200, done.content
    assert done.json()["path"] == "/mnt/shared/data/shard.bin"
    stored = aws.client("s3", region=cluster.region).get_object(Bucket=bucket, Key=body["key"])
    assert stored["Body"].read() == data
    again = operator.post(MULTIPART.format(cluster.pk) + "/abort",
                          {"path": "data/shard.bin", "upload_id": body["upload_id"]})
    assert again.status_code == 400 and again.json()["fields"]["upload_id"][0]["code"] == "upload_not_found"
    assert list(AuditEvent.objects.filter(team=cast.team, action__startswith="shared_file.")
                .order_by("id").values_list("action", flat=True)) == ["shared_file.upload",
                                                                     "shared_file.upload_complete"]


def test_an_aborted_upload_drops_its_parts_and_bad_sizes_are_refused(cast, api, sandbox):
    cluster = factories.cluster(cast.team)
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    operator = api(cast.operator)
    for size, code in [(shared_files.MIN_PART_BYTES, "use_single_upload"),
                       (shared_files.MULTIPART_MAX_BYTES + 1, "file_too_large"), (0, "min_value")]:
        refused = operator.post(MULTIPART.format(cluster.pk), {"path": "data/x.bin", "size": size})
        assert refused.status_code == 400 and refused.json()["fields"]["size"][0]["code"] == code, refused.content
    refused = operator.post(MULTIPART.format(cluster.pk), {"path": "../theirs/x.bin", "size": 10 * 1024**2})
    assert refused.json()["fields"]["path"][0]["code"] == "path_outside_shared_bucket"
    s3 = aws.client("s3", region=cluster.region)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []

    started = operator.post(MULTIPART.format(cluster.pk), {"path": "data/x.bin", "size": 10 * 1024**2}).json()
    assert len(started["parts"]) == 1 and started["parts"][0]["bytes"] == 10 * 1024**2
    assert [item["UploadId"] for item in s3.list_multipart_uploads(Bucket=bucket)["Uploads"]] == [started["upload_id"]]
    aborted = operator.post(MULTIPART.format(cluster.pk) + "/abort",
                            {"path": "data/x.bin", "upload_id": started["upload_id"]})
    assert aborted.status_code == 200 and aborted.json()["aborted"] is True
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert api(cast.viewer).post(MULTIPART.format(cluster.pk), {"path": "data/x.bin", "size": 10 * 1024**2}) \
        .status_code == 403


def test_a_portal_page_signing_an_upload_gets_the_bucket_s_cors_rule_an_api_client_does_not(cast, api, sandbox):
    cluster = factories.cluster(cast.team)
    bucket = ensure_shared_bucket(aws.client("s3", region=cluster.region), cluster.region)
    s3 = aws.client("s3", region=cluster.region)
    operator = api(cast.operator)
    assert operator.post(UPLOADS.format(cluster.pk), {"path": "a.py"}, HTTP_ORIGIN="https://evil.example") \
        .status_code == 200
    assert operator.post(UPLOADS.format(cluster.pk), {"path": "a.py"}).status_code == 200
    assert "CORSRules" not in _cors(s3, bucket)

    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://docs.example"], "AllowedMethods": ["GET"]}]})
    for _ in range(2):
        signed = operator.post(UPLOADS.format(cluster.pk), {"path": "a.py"}, HTTP_ORIGIN="http://testserver")
        assert signed.status_code == 200
    rules = _cors(s3, bucket)["CORSRules"]
    assert [rule["AllowedOrigins"] for rule in rules] == [["https://docs.example"], ["http://testserver"]]
    assert (set(rules[1]["AllowedMethods"]), rules[1]["ExposeHeaders"]) == ({"PUT", "POST"}, ["ETag"])


def _cors(s3, bucket: str) -> dict:
    try:
        return s3.get_bucket_cors(Bucket=bucket)
    except s3.exceptions.ClientError:
        return {}
