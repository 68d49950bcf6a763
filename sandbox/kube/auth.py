"""Authentication as EKS does it: ``Authorization: Bearer k8s-aws-v1.<base64url(presigned STS GetCallerIdentity URL)>``.

The URL must be a SigV4 query-signed ``GetCallerIdentity`` for ``sts`` whose ``X-Amz-SignedHeaders`` are ``host``
and ``x-k8s-aws-id``, dated no more than 15 minutes ago (EKS ignores the short ``X-Amz-Expires`` that
``aws eks get-token`` asks for and honours a token for 15 minutes). Where EKS has STS check the signature — STS
receives the URL with the header ``x-k8s-aws-id: <this cluster's name>`` — ``authenticate`` recomputes it with
the secret key the AWS side knows for the URL's access key id (``Identify``), with this cluster's name as that
header: a token signed for another cluster, with another secret, or altered in any signed part is refused. A
session token in the URL must be the one issued with the key. The URL's host may be any STS endpoint, including
the sandbox's own (``AWS_ENDPOINT_URL``). Every refusal is the same ``401 Unauthorized`` as on EKS.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
from collections.abc import Callable
from urllib.parse import quote, unquote, urlsplit

from sandbox import clock
from sandbox.kube.access import Credential
from sandbox.kube.errors import unauthorized

PREFIX = "k8s-aws-v1."
VALIDITY_SECONDS = 15 * 60
CLOCK_SKEW_SECONDS = 5 * 60
CLUSTER_ID_HEADER = "x-k8s-aws-id"
SIGNED_HEADERS = ("host", CLUSTER_ID_HEADER)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_SIGNED_QUERY = ("X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Signature")

#: The AWS side's answer to "whose key is this?": the credential, or ``None`` for a key it does not know.
Identify = Callable[[str], Credential | None]


def _presigned_url(token: str) -> str | None:
    if not token.startswith(PREFIX):
        return None
    encoded = token[len(PREFIX):]
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _query_pairs(query: str) -> list[tuple[str, str]]:
    return [(unquote(key), unquote(value)) for key, _, value in
            (pair.partition("=") for pair in query.split("&") if pair)]


def _shape_problem(url: str, query: dict[str, str]) -> str | None:
    """Why the presigned URL is not a usable ``GetCallerIdentity`` token, ignoring its signature."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or query.get("action") != "GetCallerIdentity":
        return "not an STS GetCallerIdentity URL"
    if query.get("x-amz-algorithm") != "AWS4-HMAC-SHA256" or not query.get("x-amz-signature") \
            or len(query.get("x-amz-credential", "").split("/")) != 5:
        return "not a SigV4 presigned URL"
    if CLUSTER_ID_HEADER not in query.get("x-amz-signedheaders", "").split(";"):
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


def token_problem(authorization: str | None) -> str | None:
    """Why the ``Authorization`` header is not shaped like an EKS token, or ``None`` when it is (the signature is
    ``authenticate``'s business)."""
    if not authorization or not authorization.startswith("Bearer "):
        return "no bearer token"
    url = _presigned_url(authorization[len("Bearer "):].strip())
    if url is None:
        return "not a k8s-aws-v1 token"
    return _shape_problem(url, {key.lower(): value for key, value in _query_pairs(urlsplit(url).query)})


def _host(netloc: str, scheme: str) -> str:
    host = netloc.rpartition("@")[2].lower()
    default = ":443" if scheme == "https" else ":80"
    return host.removesuffix(default)


def _signature(url: str, cluster_name: str, secret_key: str) -> str:
    """The SigV4 signature STS computes for the presigned ``url`` sent with ``x-k8s-aws-id: cluster_name``."""
    parts = urlsplit(url)
    pairs = [(key, value) for key, value in _query_pairs(parts.query) if key != "X-Amz-Signature"]
    query = {key: value for key, value in pairs}
    canonical_query = "&".join(f"{quote(key, safe='-_.~')}={quote(value, safe='-_.~')}"
                               for key, value in sorted(pairs))
    headers = {"host": _host(parts.netloc, parts.scheme), CLUSTER_ID_HEADER: cluster_name}
    signed = query["X-Amz-SignedHeaders"]
    canonical_headers = "".join(f"{name}:{headers[name]}\n" for name in signed.split(";"))
    canonical_request = "\n".join(["GET", parts.path or "/", canonical_query, canonical_headers, signed,
                                   EMPTY_SHA256])
    _, date, region, service, terminator = query["X-Amz-Credential"].split("/")
    scope = f"{date}/{region}/{service}/{terminator}"
    string_to_sign = "\n".join(["AWS4-HMAC-SHA256", query["X-Amz-Date"], scope,
                                hashlib.sha256(canonical_request.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (date, region, service, terminator):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


def authenticate(authorization: str | None, cluster_name: str, identify: Identify) -> Credential:
    """The principal behind a valid token for ``cluster_name``; raises ``401 Unauthorized`` otherwise."""
    if token_problem(authorization):
        raise unauthorized()
    assert authorization is not None
    url = _presigned_url(authorization[len("Bearer "):].strip())
    assert url is not None
    query = dict(_query_pairs(urlsplit(url).query))
    if any(key not in query for key in _SIGNED_QUERY):  # SigV4's parameter names are case-sensitive
        raise unauthorized()
    access_key, date, _, service, terminator = query["X-Amz-Credential"].split("/")
    if service != "sts" or terminator != "aws4_request" or not query["X-Amz-Date"].startswith(date) \
            or set(query["X-Amz-SignedHeaders"].split(";")) - set(SIGNED_HEADERS):
        raise unauthorized()
    credential = identify(access_key)
    if credential is None or query.get("X-Amz-Security-Token") != credential.session_token:
        raise unauthorized()
    expected = _signature(url, cluster_name, credential.secret_key)
    if not hmac.compare_digest(expected, query["X-Amz-Signature"]):
        raise unauthorized()
    return credential
