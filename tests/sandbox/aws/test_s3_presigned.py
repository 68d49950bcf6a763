"""The sandbox's S3 takes what a browser sends with presigned requests, as S3 does: a multipart upload created, its
parts sent and completed through presigned URLs only (the way a browser uploads a file too big for one request),
with the parts' ETags readable across origins; and the CORS preflight of such a PUT is answered."""

from __future__ import annotations

import re

import httpx

from tests.sandbox.aws.helpers import REGION

PART = 5 * 1024 * 1024  # S3's smallest part but the last


def test_a_multipart_upload_through_presigned_urls_only(client):
    s3 = client("s3")
    s3.create_bucket(Bucket="shared", CreateBucketConfiguration={"LocationConstraint": REGION})
    params = {"Bucket": "shared", "Key": "teams/vision/data/big.bin"}

    created = httpx.post(s3.generate_presigned_url("create_multipart_upload", Params=params))
    assert created.status_code == 200, created.text
    upload_id = re.search(r"<UploadId>([^<]+)</UploadId>", created.text).group(1)

    bodies = [b"a" * PART, b"b" * 1024]
    parts = []
    for number, body in enumerate(bodies, start=1):
        url = s3.generate_presigned_url("upload_part", Params={**params, "UploadId": upload_id,
                                                               "PartNumber": number})
        sent = httpx.put(url, content=body, headers={"Origin": "http://portal.example"})
        assert sent.status_code == 200, sent.text
        assert sent.headers.get("Access-Control-Allow-Origin") in ("*", "http://portal.example")
        parts.append(f"<Part><PartNumber>{number}</PartNumber><ETag>{sent.headers['ETag']}</ETag></Part>")

    done = httpx.post(s3.generate_presigned_url("complete_multipart_upload",
                                                Params={**params, "UploadId": upload_id}),
                      content=f"<CompleteMultipartUpload>{''.join(parts)}</CompleteMultipartUpload>")
    assert done.status_code == 200, done.text
    assert s3.get_object(**params)["Body"].read() == b"".join(bodies)


def test_the_preflight_of_a_presigned_put_is_answered(client):
    s3 = client("s3")
    s3.create_bucket(Bucket="shared", CreateBucketConfiguration={"LocationConstraint": REGION})
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "shared", "Key": "x"})
    preflight = httpx.options(url, headers={"Origin": "http://portal.example", "Access-Control-Request-Method": "PUT"})
    assert preflight.status_code in (200, 204)
    assert "PUT" in preflight.headers.get("Access-Control-Allow-Methods", "").upper()
