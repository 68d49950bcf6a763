"""The authentication backend of single sign-on: mozilla-django-oidc's authorization-code flow (with PKCE and a
nonce), plus what it leaves to its users — the ID token's issuer and audience checked, the endpoints from
discovery, and the account resolved by ``services.sso_sign_in`` (issuer and subject, not the e-mail address)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from accounts.models import User
from accounts.sso import provider, services


class SsoBackend(OIDCAuthenticationBackend):  # type: ignore[misc]  # the library has no type hints
    """Django instantiates a backend for each use, so settings are read then, and a deployment without single
    sign-on never reaches the library's checks of them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        if request is None or not provider.configured() or "code" not in request.GET:
            return None
        super().__init__()
        found = provider.endpoints()
        self.OIDC_OP_TOKEN_ENDPOINT = found.token
        self.OIDC_OP_USER_ENDPOINT = found.userinfo
        self.OIDC_OP_JWKS_ENDPOINT = found.jwks
        user: User | None = super().authenticate(request, **kwargs)
        return user

    def get_settings(self, attr: str, *args: Any) -> Any:
        """The endpoints the library asks for at set-up come from discovery when a sign-in runs (``authenticate``);
        everything else from Django's settings."""
        if attr in {"OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT", "OIDC_OP_JWKS_ENDPOINT"}:
            return ""
        return super().get_settings(attr, *args)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The signature, expiry and nonce (the library), then the issuer and the audience: an ID token made for
        another client of the same provider is refused."""
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if str(payload.get("iss", "")).rstrip("/") != provider.issuer():
            raise SuspiciousOperation("The ID token was issued by another issuer.")
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("The ID token was issued for another client.")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims, completed by the userinfo endpoint's when the provider has one (some put the
        groups in one, some in the other). Both must name the same subject."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = super().get_userinfo(access_token, id_token, payload)
            if userinfo.get("sub") != payload.get("sub"):
                raise SuspiciousOperation("The userinfo endpoint answered for another subject.")
            claims.update(userinfo)
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> User:
        """The account of the subject (made on the first sign-in) with the group mappings applied; it may come back
        inactive (deactivated by the mappings or by a platform admin), which refuses the sign-in."""
        claims = self.get_userinfo(access_token, id_token, payload)
        if not claims.get("sub"):
            raise SuspiciousOperation("The ID token has no subject.")
        return services.sso_sign_in(issuer=provider.issuer(), claims=claims)

    def get_user(self, user_id: int) -> User | None:
        """The session's user while it is active: a user deactivated (by the mappings, or by an admin) is signed out
        at their next request, as Django's own backend does."""
        user: User | None = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
