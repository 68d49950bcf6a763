"""``python -m sandbox``: serve the offline AWS and Kubernetes on fixed local ports until SIGINT or SIGTERM.

Ports come from ``INSTANTSTART_SANDBOX_AWS_PORT`` (4566) and ``INSTANTSTART_SANDBOX_KUBE_PORT`` (4567), the
time scale from ``INSTANTSTART_SANDBOX_TIME_SCALE`` (``sandbox.clock``), certificates from
``INSTANTSTART_SANDBOX_STATE_DIR`` (``sandbox.tls``). One line per endpoint is printed once everything
listens; ``GET /_sandbox/clock`` on the AWS port answering 200 is the readiness signal. Exits 0 on
SIGINT/SIGTERM, 1 when it cannot start (e.g. a port is taken).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from sandbox import clock, endpoints, tls
from sandbox.main import start_world


def main() -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    try:
        world = start_world(aws_port=endpoints.aws_port(), kube_port=endpoints.kube_port())
    except (OSError, RuntimeError) as error:
        print(f"sandbox: cannot start: {error}", file=sys.stderr, flush=True)
        return 1
    print(f"sandbox AWS         {world.aws_url}  (AWS_ENDPOINT_URL; control API {world.aws_url}/_sandbox)", flush=True)
    print(f"sandbox Kubernetes  {world.kube_url}/<region>/<eks-cluster>  (CA {tls.state_dir() / 'ca.pem'})",
          flush=True)
    print(f"sandbox time scale  {clock.scale()}  (INSTANTSTART_SANDBOX_TIME_SCALE)", flush=True)
    while not stopping.wait(0.5):
        pass
    world.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
