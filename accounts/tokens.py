"""API token secrets: generation and hashing. Only the hash is ever stored."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "isk_"
PREFIX_LENGTH = 12


def generate_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """SHA-256 is enough: the secret carries 256 bits of entropy, so there is nothing to brute-force."""
    return hashlib.sha256(secret.encode()).hexdigest()


def display_prefix(secret: str) -> str:
    return secret[:PREFIX_LENGTH]
