"""The project's top-level packages must not shadow the standard library or any installed module.

A top-level ``platform/`` package breaks botocore, wsgiref and uuid (they ``import platform``), and
with them Django, boto3, pytest, Celery and uvicorn. This test keeps every such collision out.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def top_level_packages() -> set[str]:
    return {
        path.name for path in ROOT.iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    } | {path.stem for path in ROOT.glob("*.py") if path.stem not in {"manage", "conftest"}}


def installed_modules() -> dict[str, str]:
    """Top-level module names of every installed distribution except this project → distribution."""
    modules: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name is None or name.lower() == "instantstart":
            continue
        top_level = dist.read_text("top_level.txt")
        names = top_level.split() if top_level else [
            Path(file.parts[0]).stem for file in dist.files or [] if file.suffix == ".py" or len(file.parts) > 1
        ]
        for module in names:
            if module and not module.endswith((".dist-info", ".data")) and module != "__pycache__":
                modules.setdefault(module, name)
    return modules


def test_the_project_package_is_config_not_platform():
    packages = top_level_packages()
    assert "config" in packages
    assert "platform" not in packages


def test_no_top_level_package_shadows_the_standard_library():
    assert not top_level_packages() & set(sys.stdlib_module_names)


def test_no_top_level_package_shadows_an_installed_module():
    clashes = {name: dist for name, dist in installed_modules().items() if name in top_level_packages()}
    assert clashes == {}


def test_the_check_catches_a_collision():
    assert "platform" in sys.stdlib_module_names
    assert "celery" in installed_modules()



def test_every_product_package_is_in_the_distribution():
    """``pyproject.toml`` names the packages a built (or editable) install holds; an app missing there imports only
    while the current directory happens to be the checkout (notifications once was)."""
    import fnmatch
    import tomllib

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {path.name for path in ROOT.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    missing = {package for package in packages - {"tests", "bench", "deploy"}  # the suite and the operator's tools
               if not any(fnmatch.fnmatch(package, pattern) for pattern in include)}
    assert not missing, f"add to [tool.setuptools.packages.find] include: {sorted(missing)}"
