"""A simulated distributed training run: how far each rank is, and the log lines it writes.

Pure functions of the job's annotations and of time, shared by the HyperPodPyTorchJob and RayJob controllers.
A run has ``steps`` steps (annotation ``sandbox.instantstart.dev/steps``, default ``DEFAULT_STEPS``) of
``STEP_SECONDS`` nominal seconds each. Every rank logs one line per step::

    step=42, loss=1.2345, throughput=318.27 samples/s

The loss falls along a noisy exponential; throughput is steady around ``SAMPLES_PER_WORKER`` per worker
process. The annotation ``sandbox.instantstart.dev/outcome`` picks how attempts go wrong, at
``fault_step`` (a third of the way):

- ``fail``: every attempt's last rank crashes with a CUDA error;
- ``restart-once``: only the first attempt crashes;
- ``hang``: every attempt stops logging (the processes stay up);
- ``straggle``: the last rank runs at a quarter of the others' throughput and every step takes
  ``STRAGGLE_FACTOR`` times as long (synchronous training waits for it).

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
SAMPLES_PER_WORKER = 40.0
STRAGGLE_FACTOR = 2.0
CHECKPOINT_EVERY = 10
OUTCOMES = ("fail", "hang", "straggle", "restart-once")
CRASH = ("RuntimeError: CUDA error: an illegal memory access was encountered",
         "hyperpodrun: worker process (local_rank 0) exited with code 1")


@dataclass(frozen=True)
class Plan:
    """How a job's training goes (see the module docstring)."""

    seed: str
    steps: int
    outcome: str
    workers_per_rank: int

    @property
    def fault_step(self) -> int:
        return max(1, self.steps // 3)

    @property
    def step_seconds(self) -> float:
        """Real seconds per step at the current time scale."""
        return clock.duration(STEP_SECONDS * (STRAGGLE_FACTOR if self.outcome == "straggle" else 1.0))

    def faults(self, attempt: int) -> bool:
        """Does attempt number ``attempt`` (0 first) crash or hang at ``fault_step``?"""
        return self.outcome in ("fail", "hang") or (self.outcome == "restart-once" and attempt == 0)

    def stop_step(self, attempt: int) -> int:
        """The last step attempt ``attempt`` completes."""
        return self.fault_step if self.faults(attempt) else self.steps

    def steps_done(self, start_step: int, started_at: float, now: float, attempt: int) -> int:
        """The last step completed by ``now`` in an attempt that began at ``started_at`` from ``start_step``."""
        per_step = self.step_seconds
        elapsed = math.inf if per_step <= 0 else (now - started_at) / per_step
        return int(min(start_step + elapsed, self.stop_step(attempt)))

    def step_time(self, start_step: int, started_at: float, step: int) -> float:
        """When ``step`` completed (the timestamp of its log line)."""
        return started_at + (step - start_step) * self.step_seconds

    def line(self, rank: int, ranks: int, step: int) -> str:
        """The log line rank ``rank`` of ``ranks`` writes after ``step``."""
        noise = int(hashlib.sha256(f"{self.seed}/{rank}/{step}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF - 0.5
        loss = 0.35 + 2.6 * math.exp(-step / max(self.steps / 4, 1)) + 0.06 * noise
        throughput = SAMPLES_PER_WORKER * self.workers_per_rank * (1 + 0.06 * noise)
        if self.outcome == "straggle" and rank == ranks - 1:
            throughput /= 4
        return f"step={step}, loss={loss:.4f}, throughput={throughput:.2f} samples/s"


def checkpoint_before(step: int) -> int:
    """The last checkpoint written before ``step`` (where a restart after a fault at ``step`` resumes)."""
    return max(step - 1, 0) // CHECKPOINT_EVERY * CHECKPOINT_EVERY


def plan(job: dict[str, Any], workers_per_rank: int = 1) -> Plan:
    """The plan of ``job`` from its annotations (an unknown outcome counts as none)."""
    outcome = objects.annotation(job, objects.OUTCOME)
    return Plan(seed=objects.uid(job), steps=max(1, objects.int_annotation(job, objects.STEPS, DEFAULT_STEPS)),
                outcome=outcome if outcome in OUTCOMES else "", workers_per_rank=max(1, workers_per_rank))
