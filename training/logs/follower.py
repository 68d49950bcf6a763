"""One job's log follower: every rank's pod log, read once, stored in batches, fanned out to the job's group.

:func:`follow_job` runs in one thread (the runner's, under the job's lease). Every ``DISCOVER_SECONDS`` it reads the
job's state from the database and lists its pods (``pods.job_pods``), starting a :class:`~training.logs.reader.
PodReader` for each pod not being read (a new pod, a pod re-created under the same name, a reader that failed while
its pod still runs). Readers hand lines over a queue; the follower stores them with ``store.append`` in batches of
at most ``BATCH_LINES`` lines or ``BATCH_SECONDS`` after a batch's first line, and publishes one ``log.batch`` per
stored batch.

It ends when the job is terminal in the database and every reader is done (each pod read to its end, or gone) —
or, for pods that keep running after the job ended (a RayCluster without ``shutdownAfterJobFinishes``), once
``drain_seconds`` have passed since it saw the job terminal (also when the cluster cannot be reached any more):
then it records ``logs_complete`` and publishes ``log.end``. When ``stop`` is set first it returns without writing
anything more: lines read but not stored are read again by the next follower, which resumes from the stored
watermarks (``store.watermarks``), so a follower may die at any point without losing or repeating a line.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from cloud import kube
from config.errors import ApplicationError
from training.logs import metrics, store
from training.logs.kubelet import PodLine, Watermark
from training.logs.pods import RankBook, RankPod, job_pods
from training.logs.publish import Publisher
from training.logs.reader import PodReader
from training.models import TERMINAL_JOB_STATES, TrainingJob

logger = logging.getLogger(__name__)

BATCH_LINES = 500
BATCH_SECONDS = 0.1
DISCOVER_SECONDS = 1.0
#: How often pods are looked for until the first one appears (its first lines should not wait a whole interval).
FIRST_DISCOVER_SECONDS = 0.1
DRAIN_SECONDS = 30.0
JOIN_SECONDS = 5.0


class Follower:
    """The state of one :func:`follow_job` run (see the module docstring)."""

    def __init__(self, job: TrainingJob, stop: threading.Event, *, drain_seconds: float, batch_lines: int,
                 batch_seconds: float, discover_seconds: float):
        self.job, self.stop = job, stop
        self.drain_seconds, self.batch_lines, self.batch_seconds = drain_seconds, batch_lines, batch_seconds
        self.discover_seconds = discover_seconds
        self.api: k8s.ApiClient | None = None
        self.marks = {pod: Watermark(micros, Counter(texts)) for pod, (micros, texts)
                      in store.watermarks(job.pk).items()}
        self.lines: queue.Queue[PodLine] = queue.Queue()
        self.readers: dict[str, PodReader] = {}
        self.book = RankBook()
        self.publisher = Publisher(job.pk)
        self.summary = metrics.Summary(job)
        self.pending: list[PodLine] = []
        self.batch_started = 0.0
        self.terminal_since: float | None = None
        self.all_read = False

    def run(self) -> bool:
        next_check = 0.0
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                if now >= next_check:
                    self._check(now)
                    next_check = now + (self.discover_seconds if self.readers else min(self.discover_seconds,
                                                                                       FIRST_DISCOVER_SECONDS))
                    if self._finished(now):
                        return self._complete()
                self._collect(min(next_check, self.batch_started + self.batch_seconds if self.pending else next_check))
            return False
        finally:
            for reader in self.readers.values():
                reader.stop()
            for reader in self.readers.values():
                reader.join(JOIN_SECONDS)
            self.publisher.close()

    def _check(self, now: float) -> None:
        state = TrainingJob.objects.values_list("state", flat=True).get(pk=self.job.pk)
        self.job.state = state
        if state in TERMINAL_JOB_STATES and self.terminal_since is None:
            self.terminal_since = now
        try:
            if self.api is None:
                self.api = kube.api_client(self.job.cluster.eks_name, region=self.job.cluster.region)
            pods = job_pods(self.api, self.job, self.book)
        except (ApiException, HTTPError, OSError, ApplicationError) as error:
            logger.info("listing the pods of training job %s: %s", self.job.pk, error)
            self.all_read = False
            return
        for pod in pods:
            reader = self.readers.get(pod.name)
            if reader is None or (reader.done.is_set() and (reader.uid != pod.uid or not pod.finished)):
                self._start(pod, reader)
        self.all_read = all(reader.done.is_set() for reader in self.readers.values())

    def _start(self, pod: RankPod, previous: PodReader | None) -> None:
        mark = self.marks.setdefault(pod.name, Watermark())
        if previous is not None and previous.uid != pod.uid:
            mark.reset()
        assert self.api is not None  # the pods to read were found with it
        reader = PodReader(self.api, self.job.namespace, pod, mark, self.lines)
        self.readers[pod.name] = reader
        reader.start()

    def _finished(self, now: float) -> bool:
        if self.terminal_since is None:
            return False
        if self.all_read or now - self.terminal_since >= self.drain_seconds:
            for reader in self.readers.values():
                reader.stop()
            for reader in self.readers.values():
                reader.join(JOIN_SECONDS)
            return True
        return False

    def _collect(self, until: float) -> None:
        """Take lines until ``until`` (or a full batch); store the batch once it is full or old enough."""
        try:
            line = self.lines.get(timeout=max(0.0, until - time.monotonic()))
        except queue.Empty:
            line = None
        if line is not None:
            if not self.pending:
                self.batch_started = time.monotonic()
            self.pending.append(line)
            while len(self.pending) < self.batch_lines:
                try:
                    self.pending.append(self.lines.get_nowait())
                except queue.Empty:
                    break
        if self.pending and (len(self.pending) >= self.batch_lines
                             or time.monotonic() - self.batch_started >= self.batch_seconds):
            self._flush()

    def _flush(self) -> None:
        while self.pending:
            batch, self.pending = self.pending[:self.batch_lines], self.pending[self.batch_lines:]
            self.publisher.batch(store.append(self.job.pk, batch, summary=self.summary))

    def _complete(self) -> bool:
        while True:
            try:
                self.pending.append(self.lines.get_nowait())
            except queue.Empty:
                break
        self._flush()
        last_seq = store.mark_complete(self.job.pk)
        self.publisher.end(self.job.state, last_seq)
        return True


def follow_job(job_id: int, *, stop: threading.Event, drain_seconds: float = DRAIN_SECONDS,
               batch_lines: int = BATCH_LINES, batch_seconds: float = BATCH_SECONDS,
               discover_seconds: float = DISCOVER_SECONDS) -> bool:
    """Follow job ``job_id``'s logs until they are complete (returns True) or ``stop`` is set (False).

    The caller holds the job's lease (``lease.Lease``): two followers of one job would store lines twice."""
    job = TrainingJob.objects.select_related("cluster").get(pk=job_id)
    if job.logs_complete:
        return True
    return Follower(job, stop, drain_seconds=drain_seconds, batch_lines=batch_lines, batch_seconds=batch_seconds,
                    discover_seconds=discover_seconds).run()
