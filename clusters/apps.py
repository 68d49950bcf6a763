from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"

    def ready(self) -> None:
        from clusters import cluster_settings, importing, node_actions, pipelines  # noqa: F401  (pipelines, actions)
        from clusters.features import pipeline as feature_pipelines  # noqa: F401
        from clusters.features import services as feature_services  # noqa: F401
        from clusters.instance_groups import pipelines as group_pipelines  # noqa: F401
        from clusters.instance_groups import services as group_services  # noqa: F401  (the groups' actions)
