from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts and audit"

    def ready(self) -> None:
        from accounts import access, schema  # noqa: F401 - schema registers the OpenAPI auth extension
        from config import converters  # noqa: F401 - registers the <id:…> URL converter

        access.register_declared_actions()
