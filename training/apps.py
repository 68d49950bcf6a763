from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        from training import actions, usage  # noqa: F401  (the team actions; what jobs pin on clusters)
