"""Portal URLs of single sign-on: the OpenID Connect flow (``/oidc/authenticate/``, ``/oidc/callback/`` — the
redirect URI to register with the provider) and the platform admins' settings page."""

from django.urls import include, path

from accounts.views import sso

urlpatterns = [
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("settings/sso/", sso.sso_settings, name="sso-settings"),
    path("settings/sso/mappings/", sso.group_mapping_create, name="group-mapping-create"),
    path("settings/sso/mappings/<id:mapping_id>/delete/", sso.group_mapping_delete, name="group-mapping-delete"),
]
