"""URL map: portal pages, Django admin, REST API under /api/v1/, OpenAPI schema and docs.

``/healthz`` and ``/readyz`` are answered by ``config.health.ProbeMiddleware`` before URL routing;
``/mcp`` and WebSocket routes are served by the ASGI router in ``config.asgi``.
"""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config import views
from config.api.views import api_not_found
from config.metrics import metrics

api_v1: list[URLPattern | URLResolver] = [
    path("", include("accounts.api.urls")),
    path("", include("operations.api.urls")),
    path("", include("clusters.api.urls")),
    path("", include("training.api.urls")),
    path("", include("inference.api.urls")),
    path("", include("governance.api.urls")),
    path("", include("notifications.api.urls")),
    path("", include("costs.api.urls")),
    path("", include("spending.api.urls")),
    re_path(r"^[\s\S]*$", api_not_found),
]

urlpatterns = [
    path("metrics", metrics, name="metrics"),
    path("favicon.ico", views.favicon),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script from ?script instead of inline, as the Content-Security-Policy asks.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
         name="api-docs"),
    path("", include("operations.urls")),
    path("", include("clusters.urls")),
    path("", include("training.urls")),
    path("", include("inference.urls")),
    path("", include("governance.urls")),
    path("", include("notifications.urls")),
    path("", include("costs.urls")),
    path("", include("spending.urls")),
    path("", include("accounts.urls")),
]

handler403 = "config.views.permission_denied"
handler404 = "config.views.page_not_found"
handler500 = "config.views.server_error"
