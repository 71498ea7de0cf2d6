"""Load driver of issue 45: many clients ask a ``langgraph dev`` server while a second process rates runs.

One copy, used by ``tests/reliability/test_server_load.py`` (short, in CI) and by
``benchmarks/server_load.py`` (long, with its results written down). :func:`load_test`:

1. ``prepare``: a child process with ``KGMIND_HOME=<dir>/home`` imports the demo KG and
   builds its entity index (one fake run); the home is copied to ``<dir>/ref`` (the
   fresh store the serial replay starts from).
2. ``langgraph dev`` serves langgraph.json's graph on that home. A warm-up asks every
   question once; the server's RSS (process tree) is read.
3. A baseline asks ``baseline_runs`` questions one at a time (the C=1 figures).
4. The load asks ``runs`` questions, ``concurrency`` at once (English and Chinese,
   ``fake:`` model). One run in ``rate_every`` (:func:`feedback_kind`: every question, both
   kinds) is asked with ``feedback="human"``, so it pauses in ``request_feedback``; when
   it returns, a **second process** (``python server_load_driver.py rate URL``) resumes
   it through ``langgraph_sdk`` with a rating (``excellent`` or ``poor``) or with
   per-claim verdicts (issue 41: ``{"wrong": [first claim], "right": [last claim]}`` over
   the evidence items that rest on KG edges), and the server's ``apply_feedback`` node
   writes the weights, verdict rows and dispute states (the same ``apply_rating`` and
   ``apply_verdicts`` that ``kgmind feedback`` calls). The CLI itself cannot rate a server
   run: it reads runs from its own SQLite checkpoints, and LadybugDB lets one process open
   a store directory at a time, so no other process can write the store the server holds.
   With ``delete_threads`` each thread is deleted once its run finished (and was rated),
   as a deployment with a thread TTL would; otherwise ``langgraph dev`` keeps every thread
   in memory.
5. The server is stopped; a child process (``replay``) applies the same feedbacks serially
   in the server's commit order (its audit and verdict logs' order: one commit per rating
   and per flagged claim) to the fresh copy and asks each run's question on every version
   the run may have read (from the last commit finished before it was sent to the last
   begun before it returned); the run's answer and selected evidence must equal one of
   them. The final weights, audit log, verdict log and dispute states of the replay must
   equal the server's.

Run as a script it is the rater (``rate URL``), the store preparer (``prepare``) or the
serial replayer (``replay SPEC OUT``); those modes run in child processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from langgraph_server import langgraph_dev, server_env, tree_rss_bytes  # noqa: E402

__all__ = ["QUESTIONS", "LoadReport", "Phase", "load_test"]

#: Questions about the demo KG, English and Chinese (the load cycles through them).
QUESTIONS: tuple[str, ...] = (
    "I have a fever and a cough for three days. What disease might I have and which medication helps?",
    "我发烧咳嗽三天了，可能是什么病？应该吃什么药？",
    "I have a headache, nausea and sensitivity to light. What could it be?",
    "我头痛、恶心，怕光，可能是什么病？",
    "I am always thirsty and urinate often. Which test should I take?",
    "我总是口渴、尿频，应该做什么检查？",
)

#: What the second process sends to finished runs, in turn: a rating, or per-claim verdicts
#: (``wrong`` / ``right`` claim ids, issue 41).
FEEDBACK_KINDS: tuple[str, ...] = ("rating", "flags")

ASSISTANT = "kgmind"
RATINGS = ("excellent", "poor")


def _context(model: str, feedback: str) -> dict[str, Any]:
    return {"model": model, "seed": 0, "feedback": feedback}


@dataclass
class Phase:
    """Timing of one phase: how many runs, how many at once, throughput and latency percentiles."""

    name: str
    runs: int
    concurrency: int
    wall_s: float
    latencies_s: list[float] = field(repr=False)

    def summary(self) -> dict[str, Any]:
        """The phase's figures (latencies in milliseconds)."""
        lat = sorted(self.latencies_s)
        q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) > 1 else lat * 99
        return {
            "phase": self.name,
            "runs": self.runs,
            "concurrency": self.concurrency,
            "wall_s": round(self.wall_s, 3),
            "throughput_per_s": round(self.runs / self.wall_s, 3) if self.wall_s else 0.0,
            "p50_ms": round(q[49] * 1000, 1),
            "p95_ms": round(q[94] * 1000, 1),
        }


@dataclass
class RunRecord:
    """One question run as the client saw it (``status``: the thread's, when it was deleted)."""

    index: int
    question: str
    thread_id: str
    started: float
    ended: float
    kind: str | None
    fingerprint: dict[str, Any]
    run_id: str
    status: str | None = None


@dataclass
class LoadReport:
    """What :func:`load_test` measured and checked."""

    phases: list[Phase]
    rss_warm_bytes: int
    rss_after_bytes: int
    unfinished: list[str]
    mismatched: list[dict[str, Any]]
    ratings: int
    flags: int
    weight_commits: int
    verdict_commits: int
    disputed: int
    weights_equal: bool
    audit_equal: bool
    verdicts_equal: bool
    disputes_equal: bool
    log_errors: list[str]
    threads_deleted: bool
    server_log: str = field(repr=False)
    persisted_bytes: int = 0

    @property
    def rss_ratio(self) -> float:
        """Server RSS after the load over its RSS after the warm-up."""
        return self.rss_after_bytes / self.rss_warm_bytes if self.rss_warm_bytes else float("inf")

    @property
    def replay_equal(self) -> bool:
        """Whether weights, audit log, verdict log and dispute states all equal the serial replay."""
        return self.weights_equal and self.audit_equal and self.verdicts_equal and self.disputes_equal

    def summary(self) -> dict[str, Any]:
        """Every figure and check result, JSON-able."""
        return {
            "phases": [p.summary() for p in self.phases],
            "rss_warm_mib": round(self.rss_warm_bytes / 2**20, 1),
            "rss_after_mib": round(self.rss_after_bytes / 2**20, 1),
            "rss_ratio": round(self.rss_ratio, 3),
            "threads_deleted": self.threads_deleted,
            "langgraph_api_persisted_mib": round(self.persisted_bytes / 2**20, 1),
            "unfinished": self.unfinished,
            "mismatched": self.mismatched,
            "ratings": self.ratings,
            "flags": self.flags,
            "weight_commits": self.weight_commits,
            "verdict_commits": self.verdict_commits,
            "disputed_edges": self.disputed,
            "weights_equal": self.weights_equal,
            "audit_equal": self.audit_equal,
            "verdicts_equal": self.verdicts_equal,
            "disputes_equal": self.disputes_equal,
            "log_errors": self.log_errors,
        }


def fingerprint(values: dict[str, Any]) -> dict[str, Any]:
    """What must equal a serial run's: the answer, its reasoning and the evidence it was shown."""
    items = [
        e if isinstance(e, dict) else e.model_dump(mode="json") for e in values.get("selected_evidence") or []
    ]
    return {
        "answer": values.get("answer"),
        "inference_chain": values.get("inference_chain"),
        "evidence": [[e.get("id"), e.get("text"), e.get("relation_ids")] for e in items],
    }


def feedback_kind(index: int, rate_every: int) -> tuple[str | None, int]:
    """Whether run ``index`` is rated, with which kind of feedback, and the turn of that kind.

    One run in ``rate_every``, chosen so that every question gets both kinds: runs go
    through :data:`QUESTIONS` in blocks; block ``b`` rates the questions ``q`` with
    ``(b + index) % rate_every == 0``, and blocks alternate between the kinds. (Every
    ``rate_every``-th run would rate only questions 0 and 3 with 6 questions and
    ``rate_every=3``, and give each of them one kind only.)
    """
    block = index // len(QUESTIONS)
    if rate_every <= 0 or (block + index) % rate_every:
        return None, 0
    return FEEDBACK_KINDS[block % len(FEEDBACK_KINDS)], block // len(FEEDBACK_KINDS)


def feedback_payload(kind: str, turn: int, values: dict[str, Any]) -> dict[str, Any]:
    """The resume payload the rater sends: a rating, or verdicts on claims that rest on KG edges.

    ``flags`` calls the first evidence item with edges wrong and the last one right (an
    evidence id is a claim id, :mod:`kgmind.graphs.claims`); a run with no such item gets
    an empty verdict list, which finishes it and writes nothing.
    """
    if kind == "rating":
        return {"rating": RATINGS[turn % 2]}
    claims = [item[0] for item in fingerprint(values)["evidence"] if item[2]]
    return {"wrong": claims[:1], "right": claims[1:][-1:]}


# -- clients ---------------------------------------------------------------------------------


async def _ask(
    client: Any, index: int, question: str, model: str, kind: str | None
) -> tuple[RunRecord, dict[str, Any]]:
    thread = await client.threads.create()
    started = time.monotonic()
    out = await client.runs.wait(
        thread["thread_id"],
        ASSISTANT,
        input={"question": question},
        context=_context(model, "human" if kind else "off"),
    )
    ended = time.monotonic()
    values = dict(out) if isinstance(out, dict) else {}
    record = RunRecord(
        index,
        question,
        thread["thread_id"],
        started,
        ended,
        kind,
        fingerprint(values),
        str(values.get("run_id")),
    )
    return record, values


async def finish_thread(client: Any, thread_id: str) -> str:
    """Delete a thread whose run is over (as a thread TTL would) and return its last status."""
    thread = await client.threads.get(thread_id)
    await client.threads.delete(thread_id)
    return str(thread["status"])


async def run_phase(
    url: str,
    name: str,
    runs: int,
    concurrency: int,
    model: str = "fake:load",
    rate_every: int = 0,
    rater: subprocess.Popen[str] | None = None,
    offset: int = 0,
    delete_threads: bool = False,
) -> tuple[Phase, list[RunRecord]]:
    """Ask ``runs`` questions, ``concurrency`` at once; hand every ``rate_every``-th to ``rater``.

    With ``delete_threads`` a thread nobody rates is deleted when its run returns; the
    rater deletes the others after resuming them.
    """
    from langgraph_sdk import get_client

    client = get_client(url=url, timeout=600)
    sem = asyncio.Semaphore(concurrency)
    records: list[RunRecord] = []

    async def one(i: int) -> None:
        kind, turn = feedback_kind(i, rate_every) if rater is not None else (None, 0)
        async with sem:
            record, values = await _ask(client, offset + i, QUESTIONS[i % len(QUESTIONS)], model, kind)
        records.append(record)
        if kind and rater is not None and rater.stdin is not None:
            item = {
                "kind": kind,
                "thread_id": record.thread_id,
                "run_id": record.run_id,
                "payload": feedback_payload(kind, turn, values),
                "delete": delete_threads,
            }
            rater.stdin.write(json.dumps(item) + "\n")
            rater.stdin.flush()
        elif delete_threads:
            record.status = await finish_thread(client, record.thread_id)

    t0 = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(runs)))
    wall = time.monotonic() - t0
    records.sort(key=lambda r: r.index)
    return Phase(name, runs, concurrency, wall, [r.ended - r.started for r in records]), records


async def _rate_loop(url: str, lines: Iterable[str], concurrency: int = 2) -> list[dict[str, Any]]:
    """Resume each paused run with its payload, ``concurrency`` at once; what each resume did."""
    from langgraph_sdk import get_client

    client = get_client(url=url, timeout=600)
    sem = asyncio.Semaphore(concurrency)
    done: list[dict[str, Any]] = []

    async def one(item: dict[str, Any]) -> None:
        async with sem:
            started = time.monotonic()
            out = await client.runs.wait(
                item["thread_id"],
                ASSISTANT,
                command={"resume": item["payload"]},
                context=_context("fake:load", "human"),
            )
            ended = time.monotonic()
            status = await finish_thread(client, item["thread_id"]) if item["delete"] else None
        fb = dict((out or {}).get("feedback") or {}) if isinstance(out, dict) else {}
        done.append({**item, "started": started, "ended": ended, "feedback": fb, "status": status})

    tasks: list[asyncio.Task[None]] = []
    loop = asyncio.get_running_loop()
    reader = iter(lines)
    while True:
        line = await loop.run_in_executor(None, next, reader, "")
        if not line.strip():
            break
        tasks.append(asyncio.create_task(one(json.loads(line))))
    await asyncio.gather(*tasks)
    return done


def _start_rater(url: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "rate", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


# -- checks ----------------------------------------------------------------------------------


def _child(args: list[str], home: Path, timeout: float = 900) -> None:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        env=server_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def _windows(
    records: Sequence[RunRecord | dict[str, Any]], commits: list[dict[str, Any]]
) -> list[tuple[int, int]]:
    """For each run, the weights versions it may have read (commits done before / begun before)."""
    out = []
    for r in records:
        started, ended = (r.started, r.ended) if isinstance(r, RunRecord) else (r["started"], r["ended"])
        lo = sum(1 for c in commits if c["ended"] < started)
        hi = sum(1 for c in commits if c["started"] < ended)
        out.append((lo, hi))
    return out


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ERROR_LINE = re.compile(r"Traceback|ERROR|\[(error|critical|exception)\s*\]")


def _log_errors(text: str) -> list[str]:
    """The server's lines that report an error (a traceback, or a log record at level error or worse)."""
    lines = (_ANSI.sub("", line) for line in text.splitlines())
    return [line[:300] for line in lines if _ERROR_LINE.search(line)][:20]


def load_test(
    workdir: Path,
    runs: int,
    concurrency: int,
    baseline_runs: int = 10,
    rate_every: int = 3,
    local_llm_runs: int = 0,
    delete_threads: bool = False,
) -> LoadReport:
    """Run the whole load test in ``workdir`` (see the module docstring) and return what it found."""
    home, ref = workdir / "home", workdir / "ref"
    _child(["prepare"], home)
    shutil.copytree(home, ref)
    with langgraph_dev(home, workdir / "server.log", cwd=workdir) as server:
        asyncio.run(run_phase(server.url, "warm-up", len(QUESTIONS), 1, delete_threads=delete_threads))
        if local_llm_runs:  # the local model's memory belongs to the warm server, not to a leak
            asyncio.run(
                run_phase(
                    server.url, "warm-up (local LLM)", 1, 1, model="local", delete_threads=delete_threads
                )
            )
        rss_warm = tree_rss_bytes(server.proc.pid)
        base, _ = asyncio.run(
            run_phase(server.url, "serial (C=1)", baseline_runs, 1, delete_threads=delete_threads)
        )
        rater = _start_rater(server.url, server_env(home))
        try:
            load, records = asyncio.run(
                run_phase(
                    server.url,
                    f"load (C={concurrency})",
                    runs,
                    concurrency,
                    rate_every=rate_every,
                    rater=rater,
                    delete_threads=delete_threads,
                )
            )
            out, err = rater.communicate(timeout=600)
        finally:
            if rater.poll() is None:  # the load failed: the rater would wait on its stdin forever
                rater.kill()
                rater.wait(timeout=30)
        if rater.returncode != 0:
            raise RuntimeError(f"the rater failed:\n{err[-4000:]}")
        rated = json.loads(out.strip().splitlines()[-1])
        phases = [base, load]
        if local_llm_runs:
            local, _ = asyncio.run(
                run_phase(
                    server.url,
                    f"local LLM (C={concurrency})",
                    local_llm_runs,
                    concurrency,
                    model="local",
                    delete_threads=delete_threads,
                )
            )
            phases.append(local)
        unfinished = asyncio.run(_unfinished(server.url, records, rated))
        rss_after = tree_rss_bytes(server.proc.pid)
    log = server.log_text()
    report = _compare(workdir, records, rated, phases, rss_warm, rss_after, unfinished, log)
    report.threads_deleted = delete_threads
    # what langgraph dev kept of its threads, runs and checkpoints (written when it stops)
    report.persisted_bytes = sum(
        f.stat().st_size for f in (workdir / ".langgraph_api").glob("*") if f.is_file()
    )
    return report


async def _unfinished(url: str, records: list[RunRecord], rated: list[dict[str, Any]]) -> list[str]:
    """Threads not idle: as read before deletion, or now for those the server still keeps."""
    from langgraph_sdk import get_client

    client = get_client(url=url, timeout=600)
    status = {r.thread_id: r.status for r in records}
    status.update({r["thread_id"]: r["status"] for r in rated})
    bad = []
    for tid, seen in status.items():
        if seen is None:
            seen = (await client.threads.get(tid))["status"]
        if seen != "idle":
            bad.append(f"{tid}: {seen}")
    return bad


def _commits(rated: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every store commit the rater's resumes made, by feedback id: one per rating that moved
    weights, one per flagged claim not seen before (its verdict rows always land)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rated:
        fb, window = r["feedback"], {"run_id": r["run_id"], "started": r["started"], "ended": r["ended"]}
        if fb.get("changes"):
            out[fb["feedback_id"]] = {
                "kind": "rating",
                "rating": fb["rating"],
                "relation_ids": fb["relation_ids"],
                **window,
            }
        for v in fb.get("verdicts") or []:
            if not v["already_applied"]:
                out[v["feedback_id"]] = {
                    "kind": "verdict",
                    "verdict": v["verdict"],
                    "relation_ids": v["relation_ids"],
                    **window,
                }
    return out


def _compare(
    workdir: Path,
    records: list[RunRecord],
    rated: list[dict[str, Any]],
    phases: list[Phase],
    rss_warm: int,
    rss_after: int,
    unfinished: list[str],
    log: str,
) -> LoadReport:
    by_fid = _commits(rated)
    spec = {
        "server_store": str(workdir / "home"),
        "feedbacks": [{"feedback_id": fid, **c} for fid, c in by_fid.items()],
        "runs": [asdict(r) for r in records],
    }
    spec_path, out_path = workdir / "replay_spec.json", workdir / "replay_out.json"
    spec_path.write_text(json.dumps(spec, ensure_ascii=False))
    _child(["replay", str(spec_path), str(out_path)], workdir / "ref", timeout=7200)
    result = json.loads(out_path.read_text())
    missing = sorted(set(by_fid) ^ set(result["commit_order"]))
    commits = [by_fid[fid] for fid in result["commit_order"] if fid in by_fid]
    mismatched: list[dict[str, Any]] = [{"commits_not_in_both": missing}] if missing else []
    for r, (lo, hi) in zip(records, _windows(records, commits), strict=True):
        seen = [result["answers"][f"{v}|{r.question}"] for v in range(lo, hi + 1)]
        if r.fingerprint not in seen:
            mismatched.append({"index": r.index, "question": r.question, "versions": [lo, hi]})
    return LoadReport(
        phases=phases,
        rss_warm_bytes=rss_warm,
        rss_after_bytes=rss_after,
        unfinished=unfinished,
        mismatched=mismatched,
        ratings=sum(1 for r in rated if r["kind"] == "rating"),
        flags=sum(1 for r in rated if r["kind"] == "flags"),
        weight_commits=sum(1 for c in by_fid.values() if c["kind"] == "rating"),
        verdict_commits=sum(1 for c in by_fid.values() if c["kind"] == "verdict"),
        disputed=result["disputed"],
        weights_equal=result["weights_equal"],
        audit_equal=result["audit_equal"],
        verdicts_equal=result["verdicts_equal"],
        disputes_equal=result["disputes_equal"],
        log_errors=_log_errors(log),
        threads_deleted=False,
        server_log=log,
    )


# -- child processes ---------------------------------------------------------------------------


def _prepare() -> None:
    """Import the demo KG and build its entity index (one fake run) in this process's KGMIND_HOME."""
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import graph

    graph.invoke({"question": QUESTIONS[0]}, context=Context(model="fake:load", seed=0))


def commit_order(store: Any) -> list[str]:
    """Feedback ids in the order the store committed them: ratings from the audit log, verdicts
    from the verdict log, merged by commit time (each stamped inside its write transaction, and
    the store's write lock serialises them)."""
    first: dict[str, str] = {}
    for row in [*store.weight_changes(), *store.verdict_log()]:
        if row.feedback_id not in first or row.at < first[row.feedback_id]:
            first[row.feedback_id] = row.at
    return sorted(first, key=lambda fid: first[fid])


def _store_state(store: Any) -> dict[str, Any]:
    """Weights, audit log, verdict log and dispute states (commit times left out)."""
    verdicts = [v.model_dump(exclude={"at"}) for v in store.verdict_log()]
    judged = sorted({v["relation_id"] for v in verdicts})
    return {
        "weights": {r.id: r.weight for r in store.iter_relations()},
        "audit": [c.model_dump(exclude={"at"}) for c in store.weight_changes()],
        "verdicts": verdicts,
        "disputes": {rid: s.model_dump() for rid, s in store.dispute_states(judged).items()},
    }


def _apply(store: Any, fid: str, f: dict[str, Any]) -> None:
    from kgmind.stores.feedback import apply_feedback, apply_verdicts

    if f["kind"] == "rating":
        apply_feedback(store, f["run_id"], f["rating"], f["relation_ids"], feedback_id=fid)
    else:
        pairs = [(rid, f["verdict"]) for rid in f["relation_ids"]]
        apply_verdicts(store, fid, f["run_id"], pairs, source="human")


def _replay(spec_path: Path, out_path: Path) -> None:
    """Serial replay on this process's (fresh) default store; see :func:`_compare` for the spec."""
    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import graph
    from kgmind.graphs.services import get_store
    from kgmind.stores.factory import open_store

    spec = json.loads(spec_path.read_text())
    server = open_store(f"ladybug:{spec['server_store']}/{_store_name()}")
    order = commit_order(server)
    feedbacks = {f["feedback_id"]: f for f in spec["feedbacks"]}
    known = [fid for fid in order if fid in feedbacks]
    store = get_store(None)
    answers: dict[str, Any] = {}
    runs = spec["runs"]
    windows = _windows(runs, [feedbacks[fid] for fid in known])
    for v in range(len(known) + 1):
        if v:
            _apply(store, known[v - 1], feedbacks[known[v - 1]])
        needed = {r["question"] for r, (lo, hi) in zip(runs, windows, strict=True) if lo <= v <= hi}
        for question in sorted(needed):
            values = graph.invoke({"question": question}, context=Context(model="fake:load", seed=0))
            answers[f"{v}|{question}"] = json.loads(json.dumps(fingerprint(dict(values)), default=str))
    mine, theirs = _store_state(store), _store_state(server)
    out = {
        "commit_order": order,
        "answers": answers,
        "disputed": len(server.disputed_relations()),
        **{f"{k}_equal": mine[k] == theirs[k] for k in ("weights", "audit", "verdicts", "disputes")},
    }
    out_path.write_text(json.dumps(out, ensure_ascii=False))


def _store_name() -> str:
    from kgmind.settings import DEFAULT_KG_NAME

    return DEFAULT_KG_NAME


def main(argv: list[str]) -> None:
    """Child-process modes: ``rate URL`` (lines on stdin), ``prepare``, ``replay SPEC OUT``."""
    mode = argv[0]
    if mode == "rate":
        done = asyncio.run(_rate_loop(argv[1], sys.stdin))
        print(json.dumps(done, ensure_ascii=False))
    elif mode == "prepare":
        _prepare()
    elif mode == "replay":
        _replay(Path(argv[1]), Path(argv[2]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    main(sys.argv[1:])
