"""``python -m config.prepare``: the runner's one setup step, in one process, before anything serves.

In order: apply unapplied migrations (``migrate`` runs only when the migration plan is not empty, so a restart
pays for loading the migration graph, not for ``migrate``'s post-migrate work), collect static files (only when the
set of files the finders list — path, size, modification time — differs from the last collection, recorded in
``STATIC_ROOT/.collected``), then ``ensure_first_admin``. One process instead of three ``manage.py`` commands: the
app registry is loaded once. Exits non-zero when a step fails; the runner then starts nothing.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path


def unapplied_migrations() -> int:
    """How many migrations ``migrate`` would apply to the default database."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def static_fingerprint() -> str:
    """A digest of every static file the finders list (path, size, modification time) and of ``STATIC_ROOT``."""
    from django.conf import settings
    from django.contrib.staticfiles.finders import get_finders

    digest = hashlib.sha256(str(settings.STATIC_ROOT).encode())
    for finder in get_finders():
        for path, storage in finder.list([]):
            status = os.stat(storage.path(path))
            digest.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    if unapplied_migrations():
        call_command("migrate", interactive=False)
    marker = Path(settings.STATIC_ROOT) / ".collected"
    fingerprint = static_fingerprint()
    if not marker.exists() or marker.read_text() != fingerprint:
        call_command("collectstatic", interactive=False, verbosity=0)
        marker.write_text(fingerprint)
    call_command("ensure_first_admin")
    return 0


if __name__ == "__main__":
    sys.exit(main())
