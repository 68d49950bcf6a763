"""Bearer API tokens for REST and MCP (``Authorization: Bearer isk_…``)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.models import ApiToken, User
from accounts.throttling import auth_failure_record, auth_failures_check
from accounts.tokens import TOKEN_PREFIX, hash_secret

#: last_used_at is refreshed at most this often, so a busy token does not write on every request.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def user_for_secret(secret: str) -> User:
    """Resolve a token secret to its active user, with ``user.api_token`` set.

    Raises ``AuthenticationFailed`` with code ``token_invalid``, ``token_expired``, ``token_revoked`` or
    ``user_inactive``. Shared by REST and the MCP stdio entry point.
    """
    if not secret.startswith(TOKEN_PREFIX):
        raise exceptions.AuthenticationFailed("The API token is not valid.", code="token_invalid")
    try:
        token = ApiToken.objects.select_related("user").get(key_hash=hash_secret(secret))
    except ApiToken.DoesNotExist:
        raise exceptions.AuthenticationFailed("The API token is not valid.", code="token_invalid") from None
    if token.revoked_at is not None:
        raise exceptions.AuthenticationFailed("The API token has been revoked.", code="token_revoked")
    now = timezone.now()
    if token.expires_at <= now:
        raise exceptions.AuthenticationFailed("The API token has expired.", code="token_expired")
    if not token.user.is_active:
        raise exceptions.AuthenticationFailed("The token's user is deactivated.", code="user_inactive")
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    user = token.user
    user.api_token = token
    return user


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """REST's (and the MCP endpoint's) bearer-token authentication. A client address over the limit of failed
    authentications is refused before the token is looked at, and every refused token counts one failure
    (``accounts.throttling``)."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, ApiToken | None] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        auth_failures_check(request)
        secret = secret.strip()
        try:
            if not secret or " " in secret:
                raise exceptions.AuthenticationFailed("Send 'Authorization: Bearer <token>'.", code="token_invalid")
            user = user_for_secret(secret)
        except exceptions.AuthenticationFailed:
            auth_failure_record(request)
            raise
        return user, user.api_token

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="instantstart"'
