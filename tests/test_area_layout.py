"""Every app keeps the area layout of docs/adding-an-area.md: the files it names exist, REST and portal URL modules
of its areas are included by the app's own URL conf, and nothing stands where the recipe has no place for it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings

ROOT = Path(settings.BASE_DIR)

#: Files every app that owns rows has (the recipe's first column).
REQUIRED = ("models.py", "actions.py", "selectors.py", "services.py", "api/urls.py", "views/__init__.py", "urls.py")

#: What may stand in ``<app>/api/``: the area triples, plus the REST helpers an app shares between its areas.
API_MODULE = re.compile(r"^(__init__|urls|serializers|views|filters|fields|responses"
                        r"|(\w+)_(urls|serializers|views))\.py$")


def _apps_with_rows() -> list:
    return [app for app in apps.get_app_configs()
            if Path(app.path).parent == ROOT and list(app.get_models())]


APPS = [app.label for app in _apps_with_rows()]


def test_the_apps_that_own_rows_are_the_ones_the_recipe_covers():
    assert {"accounts", "operations", "clusters", "training"} <= set(APPS)


@pytest.mark.parametrize("label", APPS)
def test_the_app_has_every_file_of_the_recipe(label):
    app = apps.get_app_config(label)
    missing = [name for name in REQUIRED if not (Path(app.path) / name).exists()]
    assert missing == [], f"{label} lacks {missing} (docs/adding-an-area.md)"
    assert (ROOT / "templates" / label).is_dir()


@pytest.mark.parametrize("label", APPS)
def test_rest_modules_are_area_triples(label):
    api = Path(apps.get_app_config(label).path) / "api"
    strays = [path.name for path in api.glob("*.py") if not API_MODULE.match(path.name)]
    assert strays == [], f"{label}/api/ has modules the recipe has no place for: {strays}"


@pytest.mark.parametrize("label", APPS)
def test_area_url_modules_are_included_by_the_app_url_conf(label):
    app = Path(apps.get_app_config(label).path)
    for folder, dotted in ((app / "api", f"{label}.api"), (app, label)):
        conf = (folder / "urls.py").read_text()
        for module in sorted(folder.glob("*_urls.py")):
            name = f"{dotted}.{module.stem}"
            assert f'include("{name}")' in conf, f"{folder.relative_to(ROOT)}/urls.py does not include {name}"


@pytest.mark.parametrize("label", APPS)
def test_portal_views_are_a_package_of_area_modules(label):
    app = Path(apps.get_app_config(label).path)
    assert not (app / "views.py").exists(), f"{label}/views.py: portal views live in {label}/views/<area>.py"


def test_mcp_tool_modules_are_named_after_their_area():
    modules = {path.name for path in (ROOT / "mcp_server").glob("*_tools.py")}
    assert {"training_tools.py", "cluster_tools.py"} <= modules
