from django.apps import AppConfig


class PortalConfig(AppConfig):
    """Registered so that ``{% load portal %}`` finds ``portal.templatetags.portal``; it has no models."""

    name = "portal"
    verbose_name = "Portal helpers"
