"""Fixes to moto that the sandbox applies once, before serving (``apply()``).

**Whose account is this access key?** moto answers it on every request it serves by looking the key up in the IAM
backend of *every partition* of every account — and a lookup creates a partition's IAM backend when there is none.
For partitions nobody uses that backend is never kept, so each request built four or five IAM backends, each
loading AWS's ~1,600 managed policies (``MOTO_IAM_LOAD_MANAGED_POLICIES``): about 0.2 s apiece, close to a second
for a ``DescribeVpcs``. The fix looks only in IAM backends that exist; a key created through IAM lives in one of
them, and any other key belongs to the default account, as moto answers anyway.
"""

from __future__ import annotations

from moto.core import DEFAULT_ACCOUNT_ID
from moto.iam import models as iam_models


def account_of_access_key(access_key: str) -> str:
    """The account whose IAM created ``access_key``, else moto's default account — creating no backend."""
    for account_id, account in list(iam_models.iam_backends.items()):
        for backend in list(dict.values(account)):
            if access_key in backend.access_keys:
                return account_id
    return DEFAULT_ACCOUNT_ID


def apply() -> None:
    """Install the fixes (idempotent). ``moto.core.responses`` imports the lookup at call time, so replacing the
    module attribute is enough."""
    iam_models.get_account_id_from = account_of_access_key
