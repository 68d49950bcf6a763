from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "operations"

    def ready(self) -> None:
        from operations import drainer, pipeline

        pipeline.register_declared()
        drainer.connect()
