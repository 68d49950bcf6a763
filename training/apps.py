from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        from training import actions, usage  # noqa: F401  (the team actions; what jobs pin on clusters)
        from training.lifecycle import pipeline  # noqa: F401  (registers training_job.submit)
        from training.mlflow import pipeline as mlflow_pipelines  # noqa: F401  (mlflow.create, mlflow.delete)
