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
