"""The product type-checks: mypy with django-stubs and djangorestframework-stubs, as ``[tool.mypy]`` in pyproject.toml
configures it — strict on the packages every app builds on (accounts, operations, cloud, config, portal), clean on the
rest of the product. Run alone: ``.venv/bin/mypy`` (docs/architecture.md, "Types").

mypy keeps its incremental cache in ``var/mypy`` (git-ignored), so a run after a small change re-checks only what the
change reaches.
"""

from __future__ import annotations

import subprocess
import sys

from tests.test_layout import ROOT

#: A cold run (no cache) takes about a minute of CPU; a loaded 2-core machine may stretch that several times.
TIMEOUT_SECONDS = 900


def test_the_product_type_checks_with_no_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False,
    )
    assert result.returncode == 0, f"mypy found errors (exit {result.returncode}):\n{result.stdout}{result.stderr}"
    assert "Success: no issues found" in result.stdout
