"""A simulated distributed training run: how far each rank is, and the log lines it writes.

Pure functions of the job's annotations and of time, shared by the HyperPodPyTorchJob and RayJob controllers.
A run has ``steps`` steps (annotation ``sandbox.instantstart.dev/steps``, default ``DEFAULT_STEPS``) of
``sandbox.instantstart.dev/step-seconds`` nominal seconds each (default ``STEP_SECONDS``, at least
``MIN_STEP_SECONDS``). Every rank logs ``sandbox.instantstart.dev/lines-per-step`` lines per step (default 1, at
most ``MAX_LINES_PER_STEP``): ``n - 1`` micro-batch lines spread over the step, then the step's summary::

    step=42, micro-batch 1/3, samples=40
    step=42, loss=1.2345, throughput=318.27 samples/s

The loss falls along a noisy exponential; throughput is steady around ``SAMPLES_PER_WORKER`` per worker
process. The annotation ``sandbox.instantstart.dev/outcome`` picks how attempts go wrong, at
``fault_step`` (a third of the way):

- ``fail``: every attempt's last rank crashes with a CUDA error;
- ``restart-once``: only the first attempt crashes;
- ``hang``: every attempt stops logging (the processes stay up);
- ``straggle``: the last rank runs at a quarter of the others' throughput and every step takes
  ``STRAGGLE_FACTOR`` times as long (synchronous training waits for it);
- ``nccl-timeout``: in every attempt the last rank stops progressing ``STALL_STEPS`` steps before the fault (its
  EFA path is broken), then its NCCL watchdog times out: it logs the timeout, NCCL's and libfabric's warnings
  (``nccl_lines``) and crashes.

After a restart training resumes from the last checkpoint (every ``CHECKPOINT_EVERY`` steps) before the
fault (``checkpoint_before``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from sandbox import clock
from sandbox.sim import objects

DEFAULT_STEPS = 100
STEP_SECONDS = 6.0
MIN_STEP_SECONDS = 0.001
MAX_LINES_PER_STEP = 1000
SAMPLES_PER_WORKER = 40.0
STRAGGLE_FACTOR = 2.0
CHECKPOINT_EVERY = 10
STALL_STEPS = 3
OUTCOMES = ("fail", "hang", "straggle", "restart-once", "nccl-timeout")
CRASH = ("RuntimeError: CUDA error: an illegal memory access was encountered",
         "hyperpodrun: worker process (local_rank 0) exited with code 1")


@dataclass(frozen=True)
class Plan:
    """How a job's training goes (see the module docstring)."""

    seed: str
    steps: int
    outcome: str
    workers_per_rank: int
    nominal_step_seconds: float = STEP_SECONDS
    lines_per_step: int = 1

    @property
    def fault_step(self) -> int:
        return max(1, self.steps // 3)

    @property
    def step_seconds(self) -> float:
        """Real seconds per step at the current time scale."""
        return clock.duration(self.nominal_step_seconds * (STRAGGLE_FACTOR if self.outcome == "straggle" else 1.0))

    def faults(self, attempt: int) -> bool:
        """Does attempt number ``attempt`` (0 first) crash or hang at ``fault_step``?"""
        return self.outcome in ("fail", "hang", "nccl-timeout") or (self.outcome == "restart-once" and attempt == 0)

    def stop_step(self, attempt: int) -> int:
        """The last step attempt ``attempt`` completes."""
        return self.fault_step if self.faults(attempt) else self.steps

    def rank_last_step(self, rank: int, ranks: int, done: int, attempt: int) -> int:
        """The last step rank ``rank`` of ``ranks`` has logged when the run as a whole is at ``done``: the stalled
        rank of an ``nccl-timeout`` stops ``STALL_STEPS`` before the fault."""
        if self.outcome == "nccl-timeout" and rank == ranks - 1 and self.faults(attempt):
            return min(done, max(self.stop_step(attempt) - STALL_STEPS, 0))
        return done

    def crash_lines(self, rank: int) -> tuple[str, ...]:
        """What the crashing rank ``rank`` logs when the attempt faults."""
        return nccl_lines(rank) if self.outcome == "nccl-timeout" else CRASH

    def steps_done(self, start_step: int, started_at: float, now: float, attempt: int) -> int:
        """The last step completed by ``now`` in an attempt that began at ``started_at`` from ``start_step``."""
        per_step = self.step_seconds
        elapsed = math.inf if per_step <= 0 else (now - started_at) / per_step
        return int(min(start_step + elapsed, self.stop_step(attempt)))

    def step_time(self, start_step: int, started_at: float, step: int) -> float:
        """When ``step`` completed (the timestamp of its log line)."""
        return started_at + (step - start_step) * self.step_seconds

    def metrics(self, rank: int, ranks: int, step: int) -> tuple[float, float]:
        """``(loss, throughput)`` of rank ``rank`` of ``ranks`` at ``step``, rounded as its log line shows them."""
        noise = int(hashlib.sha256(f"{self.seed}/{rank}/{step}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF - 0.5
        loss = 0.35 + 2.6 * math.exp(-step / max(self.steps / 4, 1)) + 0.06 * noise
        throughput = SAMPLES_PER_WORKER * self.workers_per_rank * (1 + 0.06 * noise)
        if self.outcome == "straggle" and rank == ranks - 1:
            throughput /= 4
        return round(loss, 4), round(throughput, 2)

    def line(self, rank: int, ranks: int, step: int) -> str:
        """The summary line rank ``rank`` of ``ranks`` writes after ``step``."""
        loss, throughput = self.metrics(rank, ranks, step)
        return f"step={step}, loss={loss:.4f}, throughput={throughput:.2f} samples/s"

    def lines(self, rank: int, ranks: int, step: int, at: float) -> list[tuple[str, float]]:
        """Every ``(line, timestamp)`` of ``step`` for a rank whose step ended at ``at``: the micro-batch lines
        spread over the step, the summary line (``line``) last, at ``at``."""
        micro = self.lines_per_step - 1
        spacing = self.step_seconds / self.lines_per_step
        samples = round(SAMPLES_PER_WORKER * self.workers_per_rank / max(micro, 1))
        return [*((f"step={step}, micro-batch {index}/{micro}, samples={samples}", at - (micro + 1 - index) * spacing)
                  for index in range(1, micro + 1)), (self.line(rank, ranks, step), at)]


def nccl_lines(rank: int) -> tuple[str, ...]:
    """The lines a rank whose collective timed out over a broken EFA path writes (PyTorch's NCCL watchdog, NCCL's
    OFI plugin, libfabric), as real runs print them."""
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=4242, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for "
        f"600412 milliseconds before timing out.",
        f"train-{rank}:77:91 [0] NCCL WARN NET/OFI Request completed with error. RC: 5. Error: Input/output error. "
        f"Completed length: 0",
        f"train-{rank}:77:91 [0] NCCL WARN NET/OFI OFI call fi_cq_readerr failed. RC: -5, ERROR: Input/output error",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        "hyperpodrun: worker process (local_rank 0) exited with code 1",
    )


def checkpoint_before(step: int) -> int:
    """The last checkpoint written before ``step`` (where a restart after a fault at ``step`` resumes)."""
    return max(step - 1, 0) // CHECKPOINT_EVERY * CHECKPOINT_EVERY


def plan(job: dict[str, Any], workers_per_rank: int = 1) -> Plan:
    """The plan of ``job`` from its annotations (an unknown outcome counts as none)."""
    outcome = objects.annotation(job, objects.OUTCOME)
    return Plan(seed=objects.uid(job), steps=max(1, objects.int_annotation(job, objects.STEPS, DEFAULT_STEPS)),
                outcome=outcome if outcome in OUTCOMES else "", workers_per_rank=max(1, workers_per_rank),
                nominal_step_seconds=max(MIN_STEP_SECONDS, objects.float_annotation(job, objects.STEP_SECONDS,
                                                                                    STEP_SECONDS)),
                lines_per_step=min(MAX_LINES_PER_STEP, max(1, objects.int_annotation(job, objects.LINES_PER_STEP, 1))))
