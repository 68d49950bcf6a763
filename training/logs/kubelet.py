"""Pod log lines as the kubelet serves them with ``timestamps=true``, and the watermark that makes a resumed read
exact.

A stream that ends while the pod still runs (a dropped connection, a rotated log file) is opened again with
``sinceTime`` = the newest stored line's timestamp. The kubelet answers every line at or after that instant —
the API server may even cut ``sinceTime`` to whole seconds — so the reader drops, until the first line newer than
the watermark, every line older than it and, at exactly its timestamp, as many copies of each text as were stored
there already. Timestamps compare at microseconds, the precision the database keeps, so a watermark rebuilt from
stored rows after a restart of the follower behaves exactly like the live one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class PodLine:
    """One line of one rank's pod log; ``micros`` is the kubelet's timestamp in microseconds since the epoch."""

    pod: str
    rank: int
    micros: int
    text: str

    @property
    def at(self) -> datetime:
        return to_datetime(self.micros)


def to_micros(moment: datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def to_datetime(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def rfc3339(micros: int) -> str:
    """``2026-01-02T03:04:05.123456Z``: what ``sinceTime`` accepts."""
    return to_datetime(micros).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(value: str) -> int | None:
    """Microseconds of an RFC 3339 timestamp with up to nanoseconds (``…05.123456789Z`` or ``+00:00``)."""
    value = value.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    head, dot, rest = value.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        value = f"{head}.{rest[:digits][:6].ljust(6, '0')}{rest[digits:]}"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return to_micros(moment) if moment.tzinfo is not None else None


def split(raw: str) -> tuple[int | None, str]:
    """``(micros, text)`` of a ``timestamps=true`` line (``None`` when it carries no timestamp)."""
    raw = raw.rstrip("\r\n")
    stamp, _, text = raw.partition(" ")
    micros = parse_timestamp(stamp)
    return (micros, text) if micros is not None else (None, raw)


@dataclass
class Watermark:
    """The newest stored timestamp of one pod's log and how many times each text was stored at it.

    :meth:`resume` arms the de-duplication before a stream is opened again with :meth:`since`; :meth:`accept`
    says whether a line read from the stream is new. Outside a resume every line is new (a live stream never
    repeats itself, even if its timestamps are out of order)."""

    micros: int | None = None
    stored: Counter = field(default_factory=Counter)
    _skip: Counter | None = None

    def since(self) -> str | None:
        return rfc3339(self.micros) if self.micros is not None else None

    def resume(self) -> None:
        self._skip = Counter(self.stored) if self.micros is not None else None

    def reset(self) -> None:
        """A different pod (re-created under the same name): its log is new from its first line."""
        self.micros, self.stored, self._skip = None, Counter(), None

    def accept(self, micros: int, text: str) -> bool:
        if self._skip is not None:
            assert self.micros is not None  # a skip is set only with the timestamp it skips at
            if micros < self.micros:
                return False
            if micros == self.micros and self._skip[text] > 0:
                self._skip[text] -= 1
                return False
            if micros > self.micros:
                self._skip = None
        if self.micros is None or micros > self.micros:
            self.micros, self.stored = micros, Counter([text])
        elif micros == self.micros:
            self.stored[text] += 1
        return True
