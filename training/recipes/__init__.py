"""Training recipes: a declarative catalog of what a user can submit and how it maps to a job.

- :data:`RECIPES` — slug → :class:`~training.recipes.base.Recipe`, in catalog order (``pytorch``,
  ``llama-factory``, ``ms-swift``, ``verl``, ``custom``);
- :func:`catalog_payload` — the JSON-ready catalog for ``GET /api/v1/training-recipes``, the MCP ``list_recipes``
  tool and the portal's submit forms;
- :data:`SHARED_MOUNT` — where the team's shared bucket prefix is mounted in every pod and in the development
  environment (the data contract; see ``training.recipes.paths``).

Validation of a submission against a cluster is ``training.planning.plan_job``.
"""

from __future__ import annotations

from typing import Any

from training.recipes.base import Launch, LaunchContext, Recipe
from training.recipes.catalog import RECIPES
from training.recipes.fields import Field, FieldProblem
from training.recipes.paths import SHARED_CLAIM, SHARED_MOUNT, SharedBucket

__all__ = ["RECIPES", "SHARED_CLAIM", "SHARED_MOUNT", "Field", "FieldProblem", "Launch", "LaunchContext", "Recipe",
           "SharedBucket", "catalog_payload"]


def catalog_payload(region: str | None = None) -> list[dict[str, Any]]:
    """Every recipe as ``{slug, title, description, path, kind, image, fields: [{name, type, required, default,
    choices, help, min, max}]}``, in catalog order. With ``region``, image defaults name that region's registry;
    without, they keep the ``{region}`` placeholder."""
    return [recipe.payload(region) for recipe in RECIPES.values()]
