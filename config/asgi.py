"""The one ASGI application: Django (portal, admin, REST), Channels WebSockets and the MCP endpoint.

* ``http``: ``/mcp`` goes to the MCP streamable-HTTP app; everything else to Django.
* ``websocket``: Channels routes, authenticated by session cookie or bearer token.
* ``lifespan``: the MCP app's (it runs the MCP session manager).

Once the application is built, what the imports made is frozen out of the garbage collector's reach (``gc.freeze``,
unless ``INSTANTSTART_GC_FREEZE=0``): those objects live as long as the process, and without it every full
collection walks all of them in the middle of some request — the operations list's p95 (bench/README.md, "REST
lists").
"""

import gc
import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402 - needs Django set up

from accounts.ws import WebSocketAuthStack  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402
from mcp_server.http import mcp_asgi_app  # noqa: E402

MCP_PATH = "/mcp"


async def http_router(scope: Any, receive: Any, send: Any) -> None:
    path = scope["path"]
    if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
        await mcp_asgi_app(scope, receive, send)
    else:
        await django_asgi(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http_router,
        "websocket": WebSocketAuthStack(URLRouter(websocket_urlpatterns)),  # type: ignore[arg-type]  # see routing
        "lifespan": mcp_asgi_app,
    }
)

if os.environ.get("INSTANTSTART_GC_FREEZE", "1") != "0":
    gc.collect()
    gc.freeze()
