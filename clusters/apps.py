from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"

    def ready(self) -> None:
        from clusters import importing, pipelines  # noqa: F401  (registers the cluster pipelines)
