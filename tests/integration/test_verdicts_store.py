"""Per-claim verdicts on the real LadybugStore: idempotent, audited, exact weight updates, restore, races."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgmind.models import Entity, Relation
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.feedback import apply_verdicts
from kgmind.stores.protocol import GraphStore, StoreError
from kgmind.stores.weights import make_rule
from race_harness import run_threads

FLU = Entity(name="Flu", type="disease")
TAILS = [Entity(name=n, type="symptom") for n in ("Fever", "Cough", "Rash")]
RELS = [Relation(head=FLU.id, type="has_symptom", tail=t.id) for t in TAILS]
FEVER, COUGH, RASH = (r.id for r in RELS)
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    close_all_stores()
    s = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    s.bulk_load([FLU, *TAILS], RELS)
    yield s
    close_all_stores()


def weights(store: GraphStore) -> dict[str, float]:
    return {r.id: r.weight for r in store.iter_relations()}


def test_verdicts_move_exactly_their_edges_by_the_bounded_rule_and_are_audited(store: GraphStore) -> None:
    before = weights(store)
    result = apply_verdicts(store, "run1:N1:wrong", "run1", [(FEVER, "wrong")], source="cli")
    siblings = {FLU.id: [(rid, before[rid]) for rid in sorted(before)]}
    expected = make_rule("poor")(siblings, [FEVER])
    assert weights(store)[FEVER] == pytest.approx(expected[FEVER])
    assert weights(store)[COUGH] == before[COUGH] and weights(store)[RASH] == before[RASH]
    assert not result.already_applied and result.verdicts == [(FEVER, "wrong")]
    assert [(c.relation_id, c.rating, c.feedback_id) for c in result.changes] == [
        (FEVER, "poor", "run1:N1:wrong")
    ]
    assert [c.model_dump() for c in store.weight_changes("run1:N1:wrong")] == [
        c.model_dump() for c in result.changes
    ]
    [row] = store.verdict_log()
    assert (row.feedback_id, row.run_id, row.relation_id, row.verdict, row.source) == (
        "run1:N1:wrong",
        "run1",
        FEVER,
        "wrong",
        "cli",
    )
    assert row.at  # stamped

    right = apply_verdicts(store, "run2:S1:right", "run2", [(COUGH, "right")], source="human")
    assert [c.rating for c in right.changes] == ["excellent"] and weights(store)[COUGH] > before[COUGH]


def test_a_repeat_changes_nothing_and_says_so(store: GraphStore) -> None:
    apply_verdicts(store, "run1:N1:wrong", "run1", [(FEVER, "wrong")], source="cli")
    state = (weights(store), store.verdict_log(), store.weight_changes(), store.weights_version())
    version = store.disputes_version()
    again = apply_verdicts(store, "run1:N1:wrong", "run1", [(FEVER, "wrong")], source="cli")
    assert again.already_applied and again.verdicts == [] and again.changes == []
    assert (weights(store), store.verdict_log(), store.weight_changes(), store.weights_version()) == state
    assert store.disputes_version() == version


def test_unknown_relation_ids_write_nothing(store: GraphStore) -> None:
    versions = (store.weights_version(), store.disputes_version())
    with pytest.raises(StoreError, match="unknown relation ids: r-nope"):
        apply_verdicts(store, "f1", "run1", [(FEVER, "wrong"), ("r-nope", "wrong")], source="cli")
    assert store.verdict_log() == [] and store.weight_changes() == []
    assert set(weights(store).values()) == {1.0}
    assert (store.weights_version(), store.disputes_version()) == versions
    with pytest.raises(ValueError, match="both wrong and right"):
        store.record_verdicts(
            "f2", "run1", [(FEVER, "wrong"), (FEVER, "right")], source="cli", rule=make_rule
        )
    assert store.verdict_log() == []


def test_two_runs_dispute_an_edge_a_confirmation_keeps_one_flag_from_it(store: GraphStore) -> None:
    apply_verdicts(store, "a:N1:wrong", "a", [(FEVER, "wrong")], source="cli")
    apply_verdicts(store, "b:N1:right", "b", [(FEVER, "right")], source="cli")
    apply_verdicts(store, "a:S1:wrong", "a", [(FEVER, "wrong")], source="cli")  # same run: counts once
    assert store.disputed_relations() == {}
    v0 = store.disputes_version()
    result = apply_verdicts(store, "c:N2:wrong", "c", [(FEVER, "wrong")], source="cli")
    assert result.states[FEVER].disputed
    assert store.disputes_version() == v0 + 1
    [(rid, st)] = store.disputed_relations().items()
    assert (rid, st.wrong, st.right, st.runs) == (FEVER, 2, 1, ["a", "c"])
    assert store.dispute_states([COUGH])[COUGH].wrong == 0


def test_restore_is_audited_and_earlier_verdicts_stop_counting(store: GraphStore) -> None:
    for run in ("a", "b"):
        apply_verdicts(store, f"{run}:N1:wrong", run, [(FEVER, "wrong")], source="cli")
    assert FEVER in store.disputed_relations()
    assert store.restore(COUGH, source="curator") is False  # not disputed: nothing written
    v0, n0 = store.disputes_version(), len(store.verdict_log())
    assert len(store.verdict_log()) == n0
    assert store.restore(FEVER, source="curator") is True
    assert store.disputed_relations() == {} and store.disputes_version() == v0 + 1
    last = store.verdict_log([FEVER])[-1]
    assert (last.verdict, last.source, last.relation_id) == ("restore", "curator", FEVER)
    assert store.restore(FEVER, source="curator") is False
    apply_verdicts(store, "c:N1:wrong", "c", [(FEVER, "wrong")], source="cli")
    assert store.dispute_states([FEVER])[FEVER].wrong == 1  # only the verdict after the restore


def test_reset_weights_keeps_disputes_and_clear_drops_them(store: GraphStore) -> None:
    for run in ("a", "b"):
        apply_verdicts(store, f"{run}:N1:wrong", run, [(FEVER, "wrong")], source="cli")
    store.reset_weights()
    assert set(weights(store).values()) == {1.0} and store.weight_changes() == []
    assert FEVER in store.disputed_relations()
    assert apply_verdicts(store, "a:N1:wrong", "a", [(FEVER, "wrong")], source="cli").already_applied
    v0 = store.disputes_version()
    store.clear()
    assert store.verdict_log() == [] and store.disputed_relations() == {}
    assert store.disputes_version() == v0 + 1


def test_concurrent_verdicts_on_one_edge_equal_a_serial_run(store: GraphStore) -> None:
    """Eight threads, 40 verdicts each on two edges (repeats included): counts and weights as if serial."""
    # threads k and k + 4 send the same feedbacks, and each sends its own twice: repeats race too
    plan = [
        (f"r{k % 4}-{j % 10}", "wrong" if j % 3 else "right", FEVER if j % 2 else COUGH)
        for k in range(8)
        for j in (*range(20), *range(20))
    ]

    def worker(k: int) -> None:
        for run, verdict, rid in plan[k * 40 : (k + 1) * 40]:
            apply_verdicts(store, f"{run}:{rid}:{verdict}", run, [(rid, verdict)], source="race")

    assert run_threads(worker, 8, together=True) == []
    distinct = {(run, rid, verdict) for run, verdict, rid in plan}
    log = store.verdict_log()
    assert sorted((v.run_id, v.relation_id, v.verdict) for v in log) == sorted(
        distinct
    )  # each once, none lost
    # the weights are the serial replay of the committed audit, in commit order
    replay = {r.id: 1.0 for r in RELS}
    for change in store.weight_changes():
        assert change.old_weight == pytest.approx(replay[change.relation_id], rel=1e-12)
        sib = {FLU.id: [(rid, replay[rid]) for rid in sorted(replay)]}
        replay.update(make_rule(change.rating)(sib, [change.relation_id]))
    assert weights(store) == pytest.approx(replay, rel=1e-12)
    assert len(store.weight_changes()) == len(distinct)
    for rid in (FEVER, COUGH):
        st = store.dispute_states([rid])[rid]
        assert st.wrong == len({run for run, r, v in distinct if r == rid and v == "wrong"})
        assert st.right == len({run for run, r, v in distinct if r == rid and v == "right"})


_CHILD = """
import json, sys
from kgmind.stores.factory import open_store
from kgmind.stores.feedback import apply_verdicts
store = open_store(sys.argv[1])
out = [apply_verdicts(store, f"{run}:N1:wrong", run, [(sys.argv[2], "wrong")], source="child").already_applied
       for run in sys.argv[3:]]
print(json.dumps([out, store.disputes_version()]))
"""


def test_verdicts_from_another_process_count_once(store: GraphStore, tmp_path: Path) -> None:
    """LadybugDB lets one process open a store at a time: two processes take turns on the same verdicts."""
    uri = store.uri
    apply_verdicts(store, "a:N1:wrong", "a", [(FEVER, "wrong")], source="cli")
    close_all_stores()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, uri, FEVER, "a", "b"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    applied, version = json.loads(proc.stdout.strip().splitlines()[-1])
    assert applied == [True, False]  # the parent's verdict is seen; the child's new one lands
    again = open_store(uri)
    assert again.disputes_version() == version
    assert again.disputed_relations()[FEVER].runs == ["a", "b"]
    assert apply_verdicts(again, "b:N1:wrong", "b", [(FEVER, "wrong")], source="cli").already_applied


@pytest.fixture
def both_ways(tmp_path: Path) -> Iterator[tuple[GraphStore, dict[str, str]]]:
    """A KG storing each fact twice (``has_symptom`` and its inverse ``possible_disease``), as EMCKG does."""
    close_all_stores()
    s = open_store(f"ladybug:{tmp_path / 'kg2'}", create=True)
    back = [Relation(head=t.id, type="possible_disease", tail=FLU.id) for t in TAILS]
    s.bulk_load([FLU, *TAILS], RELS + back)
    yield s, {r.id: b.id for r, b in zip(RELS, back, strict=True)}
    close_all_stores()


def test_a_flag_on_either_reading_of_a_fact_counts_for_the_fact(
    both_ways: tuple[GraphStore, dict[str, str]],
) -> None:
    store, twin = both_ways
    twins = store.relation_twins([FEVER, twin[FEVER], "r-unknown"])
    assert twins == {FEVER: [twin[FEVER]], twin[FEVER]: [FEVER]}
    one = apply_verdicts(store, "a:N1:wrong", "a", [(FEVER, "wrong")], source="cli")
    assert one.verdicts == [(FEVER, "wrong"), (twin[FEVER], "wrong")]
    assert {c.relation_id for c in one.changes} == {FEVER}  # the twin: Fever's only out-edge
    assert {r.relation_id for r in store.verdict_log()} == {FEVER, twin[FEVER]}
    assert set(store.disputed_relations()) == {FEVER, twin[FEVER]}  # one unconfirmed flag hides the fact
    apply_verdicts(store, "b:N4:right", "b", [(twin[FEVER], "right")], source="cli")  # the other reading
    assert store.disputed_relations() == {}  # a confirmation of either reading outweighs the flag
    apply_verdicts(store, "c:N4:wrong", "c", [(twin[FEVER], "wrong")], source="cli")
    assert {k: v.wrong for k, v in store.disputed_relations().items()} == {FEVER: 2, twin[FEVER]: 2}
    assert store.dispute_states([COUGH, twin[COUGH]])[twin[COUGH]].wrong == 0
    # a feedback judging both readings itself keeps its own verdicts; a confirmation reaches the twin
    mixed = apply_verdicts(store, "d:N2:mixed", "d", [(COUGH, "right"), (twin[RASH], "wrong")], source="cli")
    assert sorted(mixed.verdicts) == sorted(
        [(COUGH, "right"), (twin[COUGH], "right"), (twin[RASH], "wrong"), (RASH, "wrong")]
    )
    assert store.restore(twin[FEVER], source="curator") is True  # undoing one reading undoes the fact
    assert set(store.disputed_relations()) == {RASH, twin[RASH]}
    assert [r.verdict for r in store.verdict_log([FEVER, twin[FEVER]])][-2:] == ["restore", "restore"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", (1, 1)), ("2,1", (2, 1)), (" 3 2 ", (3, 2))],
)
def test_a_deployment_sets_the_dispute_rule(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch, value: str, expected: tuple[int, int]
) -> None:
    """KGMIND_DISPUTE_RULE is read by every dispute state (a curation team may want two flags)."""
    from kgmind.settings import reload_settings
    from kgmind.stores.disputes import active_rule

    monkeypatch.setenv("KGMIND_DISPUTE_RULE", value)
    reload_settings()
    try:
        rule = active_rule()
        assert (rule.min_wrong, rule.margin) == expected
        apply_verdicts(store, "a:N1:wrong", "a", [(FEVER, "wrong")], source="cli")
        assert (FEVER in store.disputed_relations()) == (expected[0] == 1)
        apply_verdicts(store, "b:N1:wrong", "b", [(FEVER, "wrong")], source="cli")
        assert (FEVER in store.disputed_relations()) == (expected[0] <= 2 and expected[1] <= 2)
    finally:
        monkeypatch.delenv("KGMIND_DISPUTE_RULE")
        reload_settings()


@pytest.mark.parametrize("value", ["2", "0,1", "a,b", "1,2,3"])
def test_a_bad_dispute_rule_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from kgmind.settings import SettingsError, reload_settings

    monkeypatch.setenv("KGMIND_DISPUTE_RULE", value)
    try:
        with pytest.raises(SettingsError, match="KGMIND_DISPUTE_RULE"):
            reload_settings()
    finally:
        monkeypatch.delenv("KGMIND_DISPUTE_RULE")
        reload_settings()
