"""The race tests' shared harness: many threads on one store, what they raised, and the audit replayed.

An exception in a plain ``threading.Thread`` is printed and lost, so a race test that only
joins its threads passes when every worker crashed. :func:`run_threads` keeps each worker's
exception and returns them, and the caller asserts the list is empty. :func:`plus_one` is a
weight rule whose result shows a lost update, and :func:`assert_audit_is_serial` checks that
the audit rows read as one update after the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

from kgmind.models import WeightChange


def run_threads(worker: Callable[[int], object], n: int, *, together: bool = False) -> list[BaseException]:
    """Run ``worker(0)`` … ``worker(n - 1)`` each in its own thread and wait for all of them.

    Args:
        worker: Called with the thread's number.
        n: How many threads.
        together: Hold every thread at a barrier until all have started, so they race from
            their first call instead of from their start-up.

    Returns:
        What the workers raised, in the order they raised it (empty when none did).
    """
    errors: list[BaseException] = []
    start = threading.Barrier(n) if together else None

    def run(k: int) -> None:
        if start is not None:
            start.wait()
        try:
            worker(k)
        except BaseException as exc:  # reported to the caller, which asserts there is none
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


def plus_one(siblings: Mapping[str, Sequence[tuple[str, float]]], ids: Sequence[str]) -> dict[str, float]:
    """A weight rule adding 1 to each rated edge: n updates that lose none add exactly n."""
    return {rid: w + 1.0 for edges in siblings.values() for rid, w in edges if rid in ids}


def assert_audit_is_serial(changes: Iterable[WeightChange], start: Mapping[str, float]) -> None:
    """Each audit row starts where the previous row on its edge ended (from ``start``): a serial replay."""
    last = dict(start)
    for c in changes:
        assert c.old_weight == last[c.relation_id], c
        last[c.relation_id] = c.new_weight
