"""Bearer-token check in the shape EKS accepts: ``k8s-aws-v1.<base64url(presigned STS GetCallerIdentity URL)>``.

The URL must be a SigV4 query-signed ``GetCallerIdentity`` whose ``X-Amz-SignedHeaders`` include
``x-k8s-aws-id``, dated no more than 15 minutes ago (EKS ignores the short ``X-Amz-Expires`` that
``aws eks get-token`` asks for and honours a token for 15 minutes). The signature itself is not verified
and the URL's host may be any STS endpoint, including the sandbox's own (``AWS_ENDPOINT_URL``).
Every caller with a well-formed token is cluster-admin.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from urllib.parse import parse_qs, urlsplit

from sandbox import clock

PREFIX = "k8s-aws-v1."
VALIDITY_SECONDS = 15 * 60
CLOCK_SKEW_SECONDS = 5 * 60


def _presigned_url(token: str) -> str | None:
    if not token.startswith(PREFIX):
        return None
    encoded = token[len(PREFIX):]
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def token_problem(authorization: str | None) -> str | None:
    """Why the ``Authorization`` header is not an acceptable EKS token, or ``None`` when it is."""
    if not authorization or not authorization.startswith("Bearer "):
        return "no bearer token"
    url = _presigned_url(authorization[len("Bearer "):].strip())
    if url is None:
        return "not a k8s-aws-v1 token"
    parts = urlsplit(url)
    query = {key.lower(): values[0] for key, values in parse_qs(parts.query).items()}
    if parts.scheme not in ("https", "http") or query.get("action") != "GetCallerIdentity":
        return "not an STS GetCallerIdentity URL"
    if query.get("x-amz-algorithm") != "AWS4-HMAC-SHA256" or not query.get("x-amz-signature") \
            or not query.get("x-amz-credential"):
        return "not a SigV4 presigned URL"
    if "x-k8s-aws-id" not in query.get("x-amz-signedheaders", "").split(";"):
        return "x-k8s-aws-id is not a signed header"
    try:
        signed_at = datetime.datetime.strptime(query.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ")
        expires = int(query.get("x-amz-expires", "0"))
    except ValueError:
        return "bad X-Amz-Date or X-Amz-Expires"
    if not 0 < expires <= VALIDITY_SECONDS:
        return "X-Amz-Expires out of range"
    age = clock.now() - signed_at.replace(tzinfo=datetime.UTC).timestamp()
    if age > VALIDITY_SECONDS or age < -CLOCK_SKEW_SECONDS:
        return "token expired"
    return None
