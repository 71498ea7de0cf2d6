"""Strings with runs of integers as flat arrays (``KeyedRuns``): what jieba's dictionary and the
gazetteer's key lengths are saved as (issue 42). A lookup must answer what a dict answers."""

from __future__ import annotations

import random
from pathlib import Path

from kgmind.retrievers.packed import KeyedRuns, read_arrays, write_arrays


def test_runs_answer_as_a_dict_and_two_maps_share_one_file(tmp_path: Path) -> None:
    rng = random.Random(4)
    alphabet = "ab头痛发热\ud800 "
    first = {
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))): [
            rng.randint(-5, 10**12) for _ in range(rng.randint(0, 4))
        ]
        for _ in range(3_000)
    }
    second = {"x": [1], "头痛": [2, 3]}
    a, b = KeyedRuns.of(first, "first"), KeyedRuns.of(second, "second")
    write_arrays(tmp_path / "runs.bin", {**a.arrays, **b.arrays}, {})
    arrays, _ = read_arrays(tmp_path / "runs.bin")
    assert set(arrays) == KeyedRuns.names("first") | KeyedRuns.names("second")
    for runs, ref in ((KeyedRuns(arrays, "first"), first), (KeyedRuns(arrays, "second"), second), (a, first)):
        assert list(runs) == list(ref) and len(runs) == len(ref)
        for key, run in ref.items():
            assert runs[key] == tuple(run) and runs.get(key) == tuple(run) and key in runs
        for key in ("不在", "zzz", "头痛 x"):
            assert (key in runs) == (key in ref) and runs.get(key, "none") == (
                tuple(ref[key]) if key in ref else "none"
            )


def test_no_strings() -> None:
    runs = KeyedRuns.of({}, "none")
    assert len(runs) == 0 and list(runs) == [] and runs.get("a") is None and "a" not in runs
