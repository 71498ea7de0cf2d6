"""Where the gold entities of grounded answers sit: summary line, diagnoses, each test/medication position.

Usage: python answer_positions.py RESULTS_JSON SPLIT METHOD [METHOD ...]  (a run with rows; calib only).
Counts the distinct vocabulary entities of each part of the rendered answer and how many are gold;
positions past the seventh are pooled.
"""

import json
import re
import sys

from kgmind.eval import gold as gd
from kgmind.eval.runner import EvalConfig, build_items
from kgmind.models import normalize_name

LABELS = (("dx", "Likely diagnoses"), ("t", "Tests"), ("m", "Medications"))


def distinct(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def main() -> None:
    path, split, methods = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(path, encoding="utf-8") as fh:
        run = json.load(fh)
    cfg = EvalConfig(
        dataset="genmedgpt5k", split=split, limit=run["limit"], seed=run["seed"], methods="kgmind"
    )
    by_id = {it.id: it for it in build_items(cfg)[0]}
    vocab = gd.load_emckg_vocabulary(None)

    def found(text: str) -> list[str]:
        return distinct([normalize_name(e.name) for e in vocab.matcher.find(text)])

    for method in methods:
        counts = {"gold": 0, "sum_all": 0, "sum_gold": 0}
        positions: dict[tuple[str, int], list[int]] = {}
        for row in run["rows"][method]:
            gold = {normalize_name(n) for n in by_id[row["id"]].gold_names}
            counts["gold"] += len(gold)
            summary, _, conclusions = row["answer"].partition("\n")
            names = found(summary)
            counts["sum_all"] += len(names)
            counts["sum_gold"] += len(set(names) & gold)
            for key, label in LABELS:
                match = re.search(label + r": (.*?)(?:\. (?:Tests|Medications):|\.$)", conclusions)
                if not match:
                    continue
                listed = found(match.group(1))
                counts[key + "_all"] = counts.get(key + "_all", 0) + len(listed)
                counts[key + "_gold"] = counts.get(key + "_gold", 0) + len(set(listed) & gold)
                for i, name in enumerate(listed):
                    seen = positions.setdefault((key, min(i, 6)), [0, 0])
                    seen[0] += 1
                    seen[1] += name in gold
        print(method, counts)
        print(sorted((k, v[1], v[0]) for k, v in positions.items()))


if __name__ == "__main__":
    main()
