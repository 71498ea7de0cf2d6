"""0.5B vs 1.5B kgmind answers on the same items: answer recall, precision, F1 and a paired count."""

import json

R = "benchmarks/results/"
SETS = {
    "calib": [
        (
            R + "2026-11-23-grounded-calib/v2/results.json",
            R + "2026-11-23-local-models/calib-local-1.5b/results.json",
        ),
        (
            R + "2026-11-23-local-models/calib40-local/results.json",
            R + "2026-11-23-local-models/calib40-local-1.5b/results.json",
        ),
    ],
    "test12": [
        (
            R + "2026-11-23-local-models/local/results.json",
            R + "2026-11-23-local-models/local-1.5b/results.json",
        ),
    ],
    # the issue's own sample: the 50 seeded test questions of the grounded-answers benchmark
    "test50": [
        (
            R + "2026-11-23-grounded-answers-50/results.json",
            R + "2026-11-23-grounded-answers-50-1.5b/results.json",
        ),
    ],
}
SETS["calib60+test50"] = SETS["calib"] + SETS["test50"]


def rows(path: str) -> dict:
    with open(path) as fh:
        return {y["id"]: y for y in json.load(fh)["rows"]["kgmind"]}


def f1(y: dict) -> float:
    p, q = y["answer_entity_recall"], y["answer_precision"]
    return 2 * p * q / (p + q) if p and q else 0.0


def mean(d: dict, ids: list, k: str) -> float:
    v = [d[i][k] for i in ids if d[i][k] is not None]
    return sum(v) / len(v)


def compare(
    name: str,
    a: dict,
    b: dict,
    walls: tuple[float, float] | None = None,
    labels: tuple[str, str] = ("0.5b", "1.5b"),
) -> None:
    """Both runs' answer measures on the same items (wall p50 in s when given), then the paired count."""
    ids = sorted(a)
    assert set(ids) == set(b), name
    for at, (label, d) in enumerate(zip(labels, (a, b), strict=True)):
        r, p = mean(d, ids, "answer_entity_recall"), mean(d, ids, "answer_precision")
        per_row = sum(f1(d[i]) for i in ids) / len(ids)
        wall = "" if walls is None else f" wall p50 {walls[at]:.1f} s"
        print(
            f"{name} n={len(ids)} {label}: recall {r:.3f} precision {p:.3f} F1 {2 * r * p / (r + p):.3f} "
            f"mean per-question F1 {per_row:.3f}{wall}"
        )
    diff = [f1(b[i]) - f1(a[i]) for i in ids]
    better, worse = sum(x > 0 for x in diff), sum(x < 0 for x in diff)
    print(f"  {labels[1]} better {better}, worse {worse}, tied {len(diff) - better - worse}")


def main() -> None:
    for name, pairs in SETS.items():
        a: dict = {}
        b: dict = {}
        for pa, pb in pairs:
            a.update(rows(pa))
            b.update(rows(pb))
        compare(name, a, b)


if __name__ == "__main__":
    main()
