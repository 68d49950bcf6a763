"""Secrets kept at rest in the database (a gated model's Hugging Face token): sealed with Fernet (AES-128-CBC and
HMAC-SHA256) under a key derived from Django's ``SECRET_KEY``, so a database dump alone does not reveal them.

Rotating ``SECRET_KEY`` makes what was sealed before unreadable (:func:`unseal` raises :class:`Unsealable`): such
a secret has to be given again.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class Unsealable(Exception):
    """The sealed text was not sealed under the current key (or was altered)."""


def _fernet() -> Fernet:
    digest = hashlib.sha256(f"instantstart-sealing:{settings.SECRET_KEY}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(plain: str) -> str:
    """``plain`` sealed (URL-safe text; a new random IV every call)."""
    return _fernet().encrypt(plain.encode()).decode()


def unseal(sealed: str) -> str:
    """What :func:`seal` sealed; :class:`Unsealable` when it cannot be opened with the current key."""
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise Unsealable("the sealed secret cannot be opened with the current key") from None
