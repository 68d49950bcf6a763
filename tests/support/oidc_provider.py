"""A small OpenID Connect provider on loopback, for the single sign-on tests: served over HTTP on 127.0.0.1 by a
thread, it speaks the authorization-code flow as a real provider does, so InstantStart's sign-in (mozilla-django-oidc
and ``accounts.sso``) runs unchanged against it.

* ``/.well-known/openid-configuration`` — discovery;
* ``/jwks`` — the public half of an RSA key made at start;
* ``/authorize`` — "signs in" the person the test chose (:meth:`OidcProvider.sign_in_as`, as if they had typed their
  password at the IdP) and redirects back to the client's ``redirect_uri`` with a one-time code and the ``state``;
* ``/token`` — checks the client's id and secret, the code, the redirect URI and the PKCE verifier, and answers with
  an access token and an RS256-signed ID token (``iss``, ``aud``, ``exp``, ``nonce``, and the groups claim);
* ``/userinfo`` — the person's profile for the access token.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID = "instantstart-tests"
CLIENT_SECRET = "loopback-client-secret"
KEY_ID = "loopback-1"


@dataclass
class Person:
    """Someone with an account at the provider, and the groups the provider puts in their tokens."""

    subject: str
    username: str
    email: str
    groups: list[str] = field(default_factory=list)


@dataclass
class _Grant:
    subject: str
    client_id: str
    redirect_uri: str
    nonce: str | None
    challenge: str | None


class OidcProvider:
    """The provider's state; the HTTP handler below reads it. Start it with :func:`running_provider`."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.people: dict[str, Person] = {}
        self.signed_in: str | None = None
        self.grants: dict[str, _Grant] = {}
        self.access_tokens: dict[str, str] = {}
        self.issuer = ""
        #: When set, the ID tokens name this audience instead of the client (a token made for another client).
        self.audience: str | None = None
        self.lock = threading.Lock()

    def add(self, person: Person) -> Person:
        self.people[person.subject] = person
        return person

    def sign_in_as(self, person: Person) -> None:
        """The person the provider's own sign-in page would accept next (its session, as it were)."""
        self.signed_in = person.subject

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid", "email", "profile", "groups"],
        }

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": KEY_ID, "alg": "RS256", "use": "sig"}]}

    def authorize(self, query: dict[str, str]) -> str:
        """The URL the browser is redirected back to: the client's ``redirect_uri`` with a code, or with an error."""
        redirect_uri = query["redirect_uri"]
        if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
            return f"{redirect_uri}?{urlencode({'error': 'unauthorized_client', 'state': query.get('state', '')})}"
        if self.signed_in is None:
            return f"{redirect_uri}?{urlencode({'error': 'login_required', 'state': query.get('state', '')})}"
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.grants[code] = _Grant(subject=self.signed_in, client_id=query["client_id"], redirect_uri=redirect_uri,
                                       nonce=query.get("nonce"), challenge=query.get("code_challenge"))
        return f"{redirect_uri}?{urlencode({'code': code, 'state': query['state']})}"

    def token(self, form: dict[str, str], authorization: str = "") -> tuple[int, dict[str, Any]]:
        """The client authenticates with ``client_secret_post`` (in the form) or ``client_secret_basic`` (the
        ``Authorization`` header)."""
        with self.lock:
            grant = self.grants.pop(form.get("code", ""), None)
        client = (form.get("client_id"), form.get("client_secret"))
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() == "basic":
            client_id, _, secret = base64.b64decode(credentials).decode().partition(":")
            client = (client_id, secret)
        if client != (CLIENT_ID, CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        if grant is None or grant.redirect_uri != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        if grant.challenge is not None:
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if digest != grant.challenge:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        person = self.people[grant.subject]
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": person.subject, "aud": self.audience or grant.client_id, "iat": now,
                  "exp": now + 300, "email": person.email, "email_verified": True, "groups": list(person.groups)}
        if grant.nonce is not None:
            claims["nonce"] = grant.nonce
        id_token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": KEY_ID})
        access_token = secrets.token_urlsafe(24)
        with self.lock:
            self.access_tokens[access_token] = person.subject
        return 200, {"access_token": access_token, "token_type": "Bearer", "expires_in": 300, "id_token": id_token}

    def userinfo(self, authorization: str) -> tuple[int, dict[str, Any]]:
        scheme, _, value = authorization.partition(" ")
        subject = self.access_tokens.get(value) if scheme.lower() == "bearer" else None
        if subject is None:
            return 401, {"error": "invalid_token"}
        person = self.people[subject]
        return 200, {"sub": person.subject, "preferred_username": person.username, "email": person.email,
                     "email_verified": True, "name": person.username}


def _handler(provider: OidcProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {key: values[0] for key, values in parse_qs(url.query).items()}
            if url.path == "/.well-known/openid-configuration":
                self._json(200, provider.discovery())
            elif url.path == "/jwks":
                self._json(200, provider.jwks())
            elif url.path == "/authorize":
                self.send_response(302)
                self.send_header("Location", provider.authorize(query))
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif url.path == "/userinfo":
                self._json(*provider.userinfo(self.headers.get("Authorization", "")))
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = {key: values[0] for key, values in parse_qs(self.rfile.read(length).decode()).items()}
            if urlsplit(self.path).path == "/token":
                self._json(*provider.token(form, self.headers.get("Authorization", "")))
            else:
                self._json(404, {"error": "not_found"})

    return Handler


@contextlib.contextmanager
def running_provider() -> Iterator[OidcProvider]:
    """An :class:`OidcProvider` served on 127.0.0.1 (a free port) by a thread, until the block ends."""
    provider = OidcProvider()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(provider))
    provider.issuer = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="oidc-provider", daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def configure(settings: Any, provider: OidcProvider, *, name: str = "Loopback IdP") -> None:
    """Point InstantStart's single sign-on at ``provider`` (pytest-django's ``settings`` fixture)."""
    settings.INSTANTSTART_OIDC_ISSUER = provider.issuer
    settings.INSTANTSTART_OIDC_PROVIDER_NAME = name
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
