from django.apps import AppConfig


class SpendingConfig(AppConfig):
    name = "spending"
