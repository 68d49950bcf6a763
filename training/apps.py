from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        from training.logs import in_worker

        in_worker.connect()
