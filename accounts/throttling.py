"""Per-token rate limits (per user for sessions, per address for anonymous callers), counted in Redis."""

from rest_framework.throttling import SimpleRateThrottle


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"

    def get_cache_key(self, request, view):
        token = getattr(request.user, "api_token", None)
        if token is not None:
            ident = f"token:{token.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
