from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts and audit"

    def ready(self):
        from accounts import schema  # noqa: F401 - registers the OpenAPI auth extension
        from config import converters  # noqa: F401 - registers the <id:…> URL converter
