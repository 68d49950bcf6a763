"""The sandbox's S3 takes what a browser sends with presigned requests, as S3 does: a multipart upload created, its
parts sent and completed through presigned URLs only (the way a browser uploads a file too big for one request),
with the parts' ETags readable across origins that the bucket's CORS rule lets in; and CORS as S3 judges it — no
configuration, no cross-origin access; the first rule matching origin, method and headers decides."""

from __future__ import annotations

import re

import httpx

from tests.sandbox.aws.helpers import REGION

PART = 5 * 1024 * 1024  # S3's smallest part but the last


def test_a_multipart_upload_through_presigned_urls_only(client):
    s3 = client("s3")
    s3.create_bucket(Bucket="shared", CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_cors(Bucket="shared", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["http://portal.example"], "AllowedMethods": ["PUT"], "ExposeHeaders": ["ETag"]}]})
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
        assert sent.headers["Access-Control-Allow-Origin"] == "http://portal.example"
        assert sent.headers["Access-Control-Expose-Headers"] == "ETag"
        parts.append(f"<Part><PartNumber>{number}</PartNumber><ETag>{sent.headers['ETag']}</ETag></Part>")

    done = httpx.post(s3.generate_presigned_url("complete_multipart_upload",
                                                Params={**params, "UploadId": upload_id}),
                      content=f"<CompleteMultipartUpload>{''.join(parts)}</CompleteMultipartUpload>")
    assert done.status_code == 200, done.text
    assert s3.get_object(**params)["Body"].read() == b"".join(bodies)


def test_cors_is_judged_by_the_bucket_s_rules(client):
    s3 = client("s3")
    s3.create_bucket(Bucket="shared", CreateBucketConfiguration={"LocationConstraint": REGION})
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "shared", "Key": "x"})

    def preflight(origin: str, method: str = "PUT", headers: str = "") -> httpx.Response:
        asked = {"Access-Control-Request-Headers": headers} if headers else {}
        return httpx.options(url, headers={"Origin": origin, "Access-Control-Request-Method": method, **asked})

    refused = preflight("http://portal.example")
    assert refused.status_code == 403 and "CORS is not enabled for this bucket" in refused.text
    s3.put_bucket_cors(Bucket="shared", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["http://*.example"], "AllowedMethods": ["GET"]},
        {"AllowedOrigins": ["http://portal.example"], "AllowedMethods": ["PUT", "POST"],
         "AllowedHeaders": ["content-*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600}]})

    allowed = preflight("http://portal.example", headers="Content-Type")
    assert allowed.status_code == 200
    assert (allowed.headers["Access-Control-Allow-Origin"], allowed.headers["Access-Control-Allow-Methods"],
            allowed.headers["Access-Control-Allow-Headers"], allowed.headers["Access-Control-Expose-Headers"],
            allowed.headers["Access-Control-Max-Age"]) == ("http://portal.example", "PUT, POST", "Content-Type",
                                                           "ETag", "600")
    assert preflight("http://docs.example", "GET").headers["Access-Control-Allow-Methods"] == "GET"
    for origin, method, headers in [("http://other.test", "PUT", ""), ("http://portal.example", "DELETE", ""),
                                    ("http://portal.example", "PUT", "x-amz-meta-owner")]:
        answer = preflight(origin, method, headers)
        assert answer.status_code == 403 and "This CORS request is not allowed" in answer.text, (origin, method)

    mine = httpx.put(url, content=b"1", headers={"Origin": "http://portal.example"})
    theirs = httpx.put(url, content=b"2", headers={"Origin": "http://other.test"})
    assert mine.status_code == theirs.status_code == 200
    assert mine.headers["Access-Control-Expose-Headers"] == "ETag"
    assert not [name for name in theirs.headers if name.lower().startswith("access-control-")]
