"""``manage.py ensure_first_admin``: make sure the platform has its first superuser.

Idempotent, so the run command and a deployment's migrate step call it on every start. The password
comes from ``INSTANTSTART_ADMIN_PASSWORD`` (never printed); without it one is generated, written to the
credentials file (mode 600, default ``var/first-admin.txt``) and printed once. Later runs create nothing
and only say where the credentials file is.
"""

from __future__ import annotations

import os
import secrets
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.services import first_admin_ensure


def credentials_write(path: Path, *, username: str, password: str, url: str) -> None:
    """Write the credentials readable by the owner only; the file never exists with wider permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(f"url: {url}\nusername: {username}\npassword: {password}\n")


class Command(BaseCommand):
    help = "Create the first platform superuser if none exists (password from the environment or generated)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--username", default=settings.INSTANTSTART_FIRST_ADMIN_USERNAME)
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--credentials-file", type=Path, default=settings.VAR_DIR / "first-admin.txt",
            help="Where a generated password is written (mode 600).",
        )

    def handle(self, *args: Any, username: str, email: str, credentials_file: Path, **options: Any) -> None:
        password = settings.INSTANTSTART_FIRST_ADMIN_PASSWORD or secrets.token_urlsafe(18)
        user, created = first_admin_ensure(username=username, password=password, email=email)
        url = f"http://localhost:{settings.PORT}"
        if not created:
            where = f"; credentials in {credentials_file}" if credentials_file.exists() else ""
            self.stdout.write(f"First admin exists: {user.get_username()}{where}")
        elif settings.INSTANTSTART_FIRST_ADMIN_PASSWORD:
            self.stdout.write(f"Created first admin {username} (password from INSTANTSTART_ADMIN_PASSWORD)")
        else:
            credentials_write(credentials_file, username=username, password=password, url=url)
            self.stdout.write(self.style.SUCCESS(f"Log in at {url} as {username} / {password}"))
            self.stdout.write(f"(saved in {credentials_file}; shown only this once)")
