"""Who an access key belongs to: the identity STS ``GetCallerIdentity`` reports for it and the secret it signs with.

* A key STS issued (``AssumeRole`` and friends): the assumed-role session, its secret and session token.
* A key IAM created for a user: that user and its secret.
* Any other key — the sandbox's dummy credentials (``AWS_ACCESS_KEY_ID=sandbox``) — is the account's default
  principal, as moto's STS answers (``arn:aws:sts::<account>:user/moto``), and its secret is the key itself
  (``AWS_SECRET_ACCESS_KEY=sandbox``): the sandbox has no other secret to check a signature against.

``principal_arn`` is the IAM form access entries take: an assumed-role session becomes its role
(``arn:aws:iam::<account>:role/<name>``), ``…:sts::…:user/…`` its IAM ARN.
moto's IAM backend is consulted only if something already created it (creating it loads every AWS managed
policy); without it no IAM user can own a key.
"""

from __future__ import annotations

import re

from moto.iam.models import iam_backends
from moto.sts.models import sts_backends

from sandbox.aws import core
from sandbox.kube.access import Credential

_ASSUMED = re.compile(r"arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/.*")


def _iam_form(arn: str) -> str:
    match = _ASSUMED.fullmatch(arn)
    if match:
        return f"arn:{match.group(1)}:iam::{match.group(2)}:role/{match.group(3)}"
    return arn.replace(":sts::", ":iam::", 1)


def credential(access_key: str) -> Credential:
    """The credential behind ``access_key`` (see the module docstring)."""
    sts = sts_backends[core.ACCOUNT_ID]["aws"]
    assumed = sts.get_assumed_role_from_access_key(access_key)
    if assumed is not None:
        return Credential(access_key, assumed.secret_access_key, assumed.session_token, assumed.arn,
                          _iam_form(assumed.arn))
    for account in list(iam_backends.values()):
        for backend in list(dict.values(account)):
            key = backend.access_keys.get(access_key)
            user = backend.get_user_from_access_key_id(access_key) if key is not None else None
            if key is not None and user is not None:
                return Credential(access_key, key.secret_access_key, None, user.arn, user.arn)
    arn = f"arn:aws:sts::{core.ACCOUNT_ID}:user/moto"
    return Credential(access_key, access_key, None, arn, _iam_form(arn))
