"""Starting the sandbox: ``python -m sandbox`` as a process, and one world per process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sandbox.main import free_port, start_world

REPO = Path(__file__).resolve().parents[3]


def test_python_m_sandbox_serves_until_sigint(tmp_path):
    aws_port, kube_port = free_port(), free_port()
    environment = {**os.environ, "INSTANTSTART_SANDBOX_AWS_PORT": str(aws_port),
                   "INSTANTSTART_SANDBOX_KUBE_PORT": str(kube_port), "INSTANTSTART_SANDBOX_TIME_SCALE": "0.01",
                   "INSTANTSTART_SANDBOX_STATE_DIR": str(tmp_path)}
    process = subprocess.Popen([sys.executable, "-m", "sandbox"], cwd=REPO, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, process.communicate()[0]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{aws_port}/_sandbox/clock", timeout=1) as response:
                    assert response.status == 200
                    assert b'"scale": 0.01' in response.read()
                    break
            except OSError:
                assert time.monotonic() < deadline, "the sandbox did not answer within 20 s"
                time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    lines = output.splitlines()
    assert any(f"http://127.0.0.1:{aws_port}" in line for line in lines)
    assert any(f"https://127.0.0.1:{kube_port}/clusters" in line for line in lines)
    assert (tmp_path / "ca.pem").exists()


def test_a_second_world_in_the_same_process_is_refused(sandbox):
    with pytest.raises(RuntimeError, match="already runs in this process"):
        start_world(aws_port=0, kube_port=0)
