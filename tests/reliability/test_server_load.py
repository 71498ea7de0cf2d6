"""A ``langgraph dev`` server under load loses nothing and does not race (issue 45, part 2; short version).

Many SDK clients ask English and Chinese questions at once (``fake:`` model) while a
second process rates finished runs or flags their claims wrong / right; the driver
(``tests/server_load_driver.py``, shared with ``benchmarks/server_load.py``) then checks
every run, the weights, the verdict log and the dispute states against a serial replay. The
figures of a long run are the benchmark's; this test asserts only what could break.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from server_load_driver import load_test

pytestmark = pytest.mark.skipif(shutil.which("langgraph") is None, reason="langgraph-cli is not installed")


@pytest.mark.timeout(600)
def test_server_under_load_equals_serial_replay(tmp_path: Path) -> None:
    pytest.importorskip("langgraph_sdk")
    report = load_test(tmp_path, runs=40, concurrency=8, baseline_runs=4, rate_every=3)
    summary = report.summary()
    assert report.unfinished == [], summary
    assert (report.ratings, report.flags) == (8, 6), summary
    assert report.weight_commits > 0 and report.verdict_commits > 0, summary
    assert report.mismatched == [], summary
    assert report.weights_equal and report.audit_equal, summary
    assert report.verdicts_equal and report.disputes_equal, summary
    assert report.log_errors == [], report.server_log[-4000:]
    assert report.rss_ratio <= 1.2, summary
