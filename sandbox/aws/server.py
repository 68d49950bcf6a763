"""Start the AWS sandbox in this process: moto's server app behind ``SandboxApp``, on a thread.

``start(host, port)`` serves every AWS API on ``http://host:port`` (port 0 picks a free one) for plain boto3
clients with any region and dummy credentials, plus the control API under ``/_sandbox/``. A ticker thread
applies due transitions a few times a second so node events reach listeners without anyone polling.
``AwsSandbox.stop()`` shuts both down. IAM's AWS managed policies are loaded (``MOTO_IAM_LOAD_MANAGED_POLICIES``
is set unless the environment already says otherwise); ``sandbox.aws.moto_fixes`` keeps moto from rebuilding IAM
backends on every request (and fixes ModifyVpcEndpoint's routes); ``sandbox.aws.ec2_network`` times NAT gateways and
refuses what they hold; ``sandbox.aws.amp`` times Prometheus workspaces; ``sandbox.aws.cfn_resources`` applies the
template properties moto's CloudFormation leaves out (a bucket's public access block, lifecycle and policy, a role's
managed policies).
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from dataclasses import dataclass, field

from flask import Flask
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from sandbox.aws import amp, cfn_resources, control_api, ec2_network, moto_fixes, s3_cors, world
from sandbox.aws.app import SandboxApp

os.environ.setdefault("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")

TICK_SECONDS = 0.1


class _QuietHandler(MotoRequestHandler):
    """Moto's request handler without a log line per request."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


@dataclass
class AwsSandbox:
    """A running AWS sandbox."""

    server: BaseWSGIServer
    thread: threading.Thread
    ticker: threading.Thread
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def host(self) -> str:
        return str(self.server.server_address[0])

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        """Stop serving and ticking (idempotent)."""
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
        self.ticker.join()


def _tick(stopping: threading.Event) -> None:
    while not stopping.wait(TICK_SECONDS):
        try:
            world.refresh()
        except Exception:  # a listener's or the sandbox's bug must not stop time
            traceback.print_exc(file=sys.stderr)


def _backend_app(service: str) -> Flask:
    """moto's Flask app for ``service``, letting exceptions reach ``SandboxApp`` (which answers in AWS's shape)."""
    app = create_backend_app(service)  # type: ignore[arg-type]  # moto types the name as a literal of its services
    app.config["PROPAGATE_EXCEPTIONS"] = True
    return app


def start(host: str = "127.0.0.1", port: int = 0) -> AwsSandbox:
    """Serve the AWS sandbox on ``host:port`` from a background thread and return its handle."""
    moto_fixes.apply()
    ec2_network.apply()
    amp.apply()
    cfn_resources.apply()
    app = s3_cors.wrap(SandboxApp(DomainDispatcherApplication(_backend_app), control_api.application))
    server = make_server(host, port, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="aws-sandbox", daemon=True)
    stopping = threading.Event()
    ticker = threading.Thread(target=_tick, args=(stopping,), name="aws-sandbox-ticker", daemon=True)
    sandbox = AwsSandbox(server=server, thread=thread, ticker=ticker, stopping=stopping)
    thread.start()
    sandbox.ticker.start()
    return sandbox
