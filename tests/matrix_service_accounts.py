"""Permission-matrix cases of service accounts (added to tests.matrix.CASES): a team's members list and read them;
its admins create and deactivate them and issue and revoke their tokens."""

from tests.matrix import ADMINS, MEMBERS, Case, team


def _account(cast):
    from accounts.service_accounts import services

    return services.service_account_create(actor=cast.admin, team=cast.team, name=f"bot-{cast.team.pk}-"
                                           f"{cast.team.service_accounts.count()}", role="viewer", source="system")


def account_of_team(cast, actor) -> dict:
    return {"team_id": cast.team.pk, "service_account_id": _account(cast).pk}


def token_of_account(cast, actor) -> dict:
    from accounts.service_accounts import services

    account = _account(cast)
    issued = services.service_account_token_create(actor=cast.admin, service_account=account, name="ci",
                                                   source="system")
    return {"team_id": cast.team.pk, "service_account_id": account.pk, "token_id": issued.token.pk}


CASES = [
    Case("service_accounts_list", MEMBERS, params=team),
    Case("service_accounts_create", ADMINS, body={"name": "ci-bot", "role": "operator"}, params=team),
    Case("service_accounts_retrieve", MEMBERS, params=account_of_team),
    Case("service_accounts_deactivate", ADMINS, params=account_of_team),
    Case("service_account_tokens_create", ADMINS, body={"name": "ci", "expires_in_days": 30},
         params=account_of_team),
    Case("service_account_tokens_revoke", ADMINS, params=token_of_account),
]
