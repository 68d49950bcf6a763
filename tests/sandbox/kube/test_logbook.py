"""A log follower's cursor across a container restart: it ends with its instance and loses no line."""

from __future__ import annotations

import threading

from sandbox.kube.logs import LogBook


def test_follow_ends_with_the_instance_it_followed_and_loses_no_line():
    book = LogBook(threading.RLock())
    for index in range(100):
        book.append("ns", "pod", "main", f"old {index}")
    lines, position, instance, restarted = book.since("ns", "pod", "main", 0)
    assert (len(lines), position, restarted) == (100, 100, False)
    book.append("ns", "pod", "main", "old 100")
    book.restart("ns", "pod", "main")
    for index in range(150):
        book.append("ns", "pod", "main", f"new {index}")

    rest, position, _, restarted = book.since("ns", "pod", "main", position, instance)
    assert [text for _, text in rest] == ["old 100"]
    assert restarted
    fresh, _, new_instance, restarted = book.since("ns", "pod", "main", 0)
    assert (len(fresh), new_instance, restarted) == (150, instance + 1, False)
    assert fresh[0][1] == "new 0"
