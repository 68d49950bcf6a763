from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "operations"

    def ready(self) -> None:
        # Registers the operation actions with accounts.access and the demo pipeline with the engine.
        from operations import demo, services  # noqa: F401
