"""Serve the emulator over HTTPS from a thread of this process.

``start(host, port, clusters, identify)`` runs uvicorn (HTTP/1.1, chunked streaming for watch and log follow)
with the sandbox CA's server certificate (``sandbox.tls.authority()``), returns once the socket listens, and
gives back a ``KubeSandbox`` whose ``stop()`` ends open streams and joins the thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

import uvicorn

from sandbox import tls
from sandbox.kube.app import ClusterSource, create_app
from sandbox.kube.auth import Identify

STARTUP_TIMEOUT = 15.0


@dataclass
class KubeSandbox:
    host: str
    port: int
    _server: uvicorn.Server
    _thread: threading.Thread
    _stopping: threading.Event

    def url(self, region: str, cluster_name: str) -> str:
        """The API server URL of one cluster (what ``eks.describe_cluster`` should report)."""
        return f"https://{self.host}:{self.port}/clusters/{region}/{cluster_name}"

    def stop(self) -> None:
        self._stopping.set()
        self._server.should_exit = True
        self._thread.join(timeout=10)


def start(host: str, port: int, clusters: ClusterSource, identify: Identify) -> KubeSandbox:
    """Start serving the clusters ``clusters()`` reports, authenticating tokens with the credentials
    ``identify(access_key_id)`` returns (``sandbox.kube.auth``); raises ``RuntimeError`` if the server does not
    come up (e.g. the port is taken)."""
    authority = tls.authority()
    stopping = threading.Event()
    config = uvicorn.Config(create_app(clusters, identify, stopping), host=host, port=port, log_level="warning",
                            lifespan="off", ssl_certfile=str(authority.cert_path), ssl_keyfile=str(authority.key_path),
                            timeout_graceful_shutdown=2, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), name=f"kube-sandbox-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the Kubernetes emulator did not start on {host}:{port}")
        time.sleep(0.02)
    return KubeSandbox(host=host, port=port, _server=server, _thread=thread, _stopping=stopping)
