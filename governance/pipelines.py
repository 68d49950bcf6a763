"""The governance app's operations (discovered by ``config.discovery``)."""

from governance.pipeline import PIPELINES

__all__ = ["PIPELINES"]
