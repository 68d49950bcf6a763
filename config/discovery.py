"""Registries filled from modules every app may have, found the way Django's admin finds ``admin.py``.

An app declares its permission actions in ``<app>/actions.py`` (``TEAM_ACTIONS``), its operation pipelines in
``<app>/pipelines.py`` (``PIPELINES``) and what it runs on clusters in ``<app>/usage.py`` (``WORKLOAD_SOURCES``,
``GROUP_PIN_SOURCES``). The app that owns each registry asks :func:`declared` from its ``AppConfig.ready`` — so a new
app is wired in by adding the module, never by editing another app's ``ready``. The team's home (the dashboard) asks
for ``<app>/home.py``'s ``HOME_PANELS`` the same way when it renders (``portal.home``).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.utils.module_loading import module_has_submodule


def declared(module: str, attribute: str) -> list[Any]:
    """``<app>.<module>.<attribute>`` of every installed app of this project (third-party apps are not asked) whose
    ``module`` exists and defines ``attribute``, in ``INSTALLED_APPS`` order. Importing the module is what declares;
    an import error in it is raised, not hidden."""
    found = []
    for app in apps.get_app_configs():
        if Path(app.path).parent == settings.BASE_DIR and module_has_submodule(app.module, module):
            value = getattr(import_module(f"{app.name}.{module}"), attribute, None)
            if value is not None:
                found.append(value)
    return found
