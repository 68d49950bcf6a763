"""What a service account's state allows: a deactivated one is final — no new tokens, nothing to deactivate."""

from __future__ import annotations

from accounts import actions
from accounts.models import ServiceAccount

_ACTIVE_ONLY = {actions.SERVICE_ACCOUNT_DEACTIVATE, actions.SERVICE_ACCOUNT_TOKEN_CREATE}


def service_account_allows(action: str, account: ServiceAccount) -> bool:
    return account.is_active or action not in _ACTIVE_ONLY
