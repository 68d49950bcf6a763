"""One thread per rank pod: follow its log, resume exactly after a drop, hand new lines to the job's follower.

A read is ``GET pods/<pod>/log?container=…&follow=true&timestamps=true[&sinceTime=…]`` through the cluster's
``ApiClient`` (``call_api``: the generated client has no ``since_time``). When the stream ends the pod is read
again:

- gone (404): the reader is done (``cleanPodPolicy`` deleted it; what it wrote was streamed before);
- another uid under the same name (re-created): its log starts afresh, the watermark is reset;
- its container restarted since the last read (a job-level restart): the end of the previous instance's log is
  read first (``previous=true``), then the new instance is followed;
- finished (Succeeded/Failed) and read once more to its end: done;
- otherwise (a dropped connection, a rotated log, a read timeout) the stream is opened again with ``sinceTime`` =
  the watermark, after a short pause that grows while attempts keep failing.

De-duplication across re-reads is the :class:`~training.logs.kubelet.Watermark`'s. Errors are retried until the
reader is stopped; nothing is lost because every re-read starts at the watermark.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from training.logs.kubelet import PodLine, Watermark, split
from training.logs.pods import RankPod, _rank_pod

logger = logging.getLogger(__name__)

#: (connect, read) seconds: a read timeout on a quiet stream is just another resume.
REQUEST_TIMEOUT = (10.0, 60.0)
RETRY_MIN_SECONDS = 0.05
RETRY_MAX_SECONDS = 5.0


class PodReader(threading.Thread):
    """Reads ``pod`` (its rank fixed) into ``out`` as :class:`PodLine` s until done or :meth:`stop`."""

    def __init__(self, api: k8s.ApiClient, namespace: str, pod: RankPod, mark: Watermark, out: queue.Queue):
        super().__init__(name=f"log-reader-{pod.name}", daemon=True)
        self.api, self.namespace, self.pod, self.mark, self.out = api, namespace, pod, mark, out
        self.uid = pod.uid
        self.restarts = pod.restarts
        self.done = threading.Event()
        self._stopping = threading.Event()
        self._response = None
        self._lock = threading.Lock()
        #: Streams opened so far (for tests and the benchmark).
        self.opened = 0

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:
                logger.debug("closing the log stream of %s", self.pod.name, exc_info=True)

    def run(self) -> None:
        pause = RETRY_MIN_SECONDS
        try:
            while not self._stopping.is_set():
                try:
                    if self._step():
                        return
                    pause = RETRY_MIN_SECONDS
                except (ApiException, HTTPError, OSError) as error:
                    logger.info("log stream of %s/%s: %s; resuming", self.namespace, self.pod.name, error)
                    pause = min(pause * 2, RETRY_MAX_SECONDS)
                self._stopping.wait(pause)
        finally:
            self.done.set()

    def _step(self) -> bool:
        """One pass: read the pod, then its log from the watermark; True when the pod is read to its end."""
        current = self._read_pod()
        if current is None:
            return True
        if current.uid != self.uid:
            self.mark.reset()
            self.uid, self.restarts = current.uid, 0
        if current.restarts > self.restarts:
            self._stream(current, previous=True)
            self.restarts = current.restarts
        status = self._stream(current, previous=False)
        if status == 404:
            return True
        if status == 400:
            self._stopping.wait(RETRY_MIN_SECONDS * 4)
            return False
        return current.finished

    def _read_pod(self) -> RankPod | None:
        try:
            pod = k8s.CoreV1Api(self.api).read_namespaced_pod(self.pod.name, self.namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return _rank_pod(pod, self.pod.rank)

    def _stream(self, pod: RankPod, *, previous: bool) -> int:
        """Read one log response into ``out``; returns the HTTP status."""
        query = [("container", pod.container), ("timestamps", "true")]
        query.append(("previous", "true") if previous else ("follow", "true"))
        since = self.mark.since()
        if since:
            query.append(("sinceTime", since))
        self.mark.resume()
        request = self.api.param_serialize("GET", "/api/v1/namespaces/{namespace}/pods/{name}/log",
                                           path_params={"namespace": self.namespace, "name": pod.name},
                                           query_params=query, auth_settings=["BearerToken"])
        response = self.api.call_api(*request, _request_timeout=REQUEST_TIMEOUT).response
        self.opened += 1
        with self._lock:
            self._response = response
        try:
            if response.status != 200:
                response.read()
                return response.status
            pending = b""
            for chunk in response.stream(65536):
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    self._take(raw)
            return 200
        finally:
            with self._lock:
                self._response = None
            response.release_conn()

    def _take(self, raw: bytes) -> None:
        micros, text = split(raw.decode("utf-8", "replace"))
        if micros is None:
            micros = self.mark.micros if self.mark.micros is not None else int(time.time() * 1_000_000)
        if self.mark.accept(micros, text):
            self.out.put(PodLine(pod=self.pod.name, rank=self.pod.rank, micros=micros, text=text))
