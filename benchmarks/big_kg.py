"""Generate a big KG with the CMCKG re-crawl's shape: seeded, deterministic, any number of relations.

What it writes: a ``head<TAB>relation<TAB>tail`` file (``kgmind kg import FILE --format triples``)
of exactly ``--relations`` distinct relations, built from *shards* of the re-crawl as kgmind's
own importer reads it (``recrawl-json``: 15 relation types, every fact with its inverse):

* shard 0 is the re-crawl itself; shard ``k`` is a copy whose entities are renamed ``NAME #k``,
  so every shard has the re-crawl's relation-type mix and degree distribution;
* **hubs are shared**: the entities in the top ``--hub-share`` of the re-crawl's degrees (the
  common symptoms, departments, foods) keep their name in every shard, so a hub's degree grows
  with the KG as a real hub's would (a 20× KG has 20× the patients of "发热"); an edge between
  two hubs exists once (shard 0);
* **cross-links**: a share ``--cross-share`` of the other edges joins two shards: the fact's
  end with the larger index moves to another shard, chosen per fact and shard, so the shards
  form one graph rather than disconnected copies. Both directions of a fact (the fact and its
  inverse, a symmetric complication's two edges) are decided together, so every fact keeps its
  inverse.

Relations stay distinct by construction: an output name says which re-crawl entity and shard it
comes from, and the shard of a fact is the shard of the end that did not move. The last shard is
cut at exactly ``--relations`` relations, taking the facts in a seeded order (both directions of
a fact next to each other). The same ``--seed`` and ``--relations`` give the same bytes.

Usage::

    python benchmarks/big_kg.py --relations 10000000 --seed 42 --out /tmp/bigkg/big10m.tsv
    kgmind kg import /tmp/bigkg/big10m.tsv --format triples --name big10m
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Share of the re-crawl's entities, by degree, kept as shared hubs (the pipeline's hub percentile is 98).
HUB_SHARE = 0.02
#: Share of the non-hub facts of a shard that cross into another shard.
CROSS_SHARE = 0.05
#: Rows written per batch (bounds the generator's memory).
_BATCH = 500_000

_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class BaseKG:
    """The re-crawl as integer columns: entity names, relation type names, and one row per edge."""

    names: list[str]
    rel_types: list[str]
    heads: np.ndarray  # int64 entity index per edge
    types: np.ndarray  # int64 relation type index per edge
    tails: np.ndarray

    @classmethod
    def from_triples(cls, triples: list[tuple[str, str, str]]) -> BaseKG:
        """Columns of distinct ``(head name, relation, tail name)`` rows, names indexed in sorted order."""
        triples = sorted(set(triples))
        names = sorted({n for h, _, t in triples for n in (h, t)})
        rel_types = sorted({r for _, r, _ in triples})
        at = {n: i for i, n in enumerate(names)}
        rt = {r: i for i, r in enumerate(rel_types)}
        return cls(
            names,
            rel_types,
            np.array([at[h] for h, _, _ in triples], dtype=np.int64),
            np.array([rt[r] for _, r, _ in triples], dtype=np.int64),
            np.array([at[t] for _, _, t in triples], dtype=np.int64),
        )

    @classmethod
    def recrawl(cls, data_dir: Path) -> BaseKG:
        """The re-crawl as kgmind's ``recrawl-json`` importer reads it (names as stored)."""
        from kgmind.importers import parse_recrawl_json

        result = parse_recrawl_json(data_dir / "cmckg" / "recrawl_full")
        name = {e.id: e.name for e in result.entities}
        return cls.from_triples([(name[r.head], r.type, name[r.tail]) for r in result.relations])

    def hubs(self, share: float) -> np.ndarray:
        """Whether each entity is a hub: the top ``share`` by degree (in + out), ties by name order."""
        n = len(self.names)
        degree = np.bincount(self.heads, minlength=n) + np.bincount(self.tails, minlength=n)
        order = np.lexsort((np.arange(n), -degree))  # degree descending, then index
        hub = np.zeros(n, dtype=bool)
        hub[order[: math.ceil(share * n)]] = True
        return hub


def mix(values: np.ndarray, salt: int) -> np.ndarray:
    """SplitMix64 of ``values ^ salt``: a fixed, seed-keyed hash per value, uniform over uint64."""
    with np.errstate(over="ignore"):
        z = (values.astype(np.uint64) ^ np.uint64(salt & _MASK)) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class Generator:
    """The shards of one big KG (see the module docstring), as ``(head, relation, tail)`` name rows."""

    def __init__(
        self,
        base: BaseKG,
        relations: int,
        seed: int,
        hub_share: float = HUB_SHARE,
        cross_share: float = CROSS_SHARE,
    ) -> None:
        if relations < 1:
            raise ValueError("relations must be at least 1")
        self.base, self.relations, self.seed, self.cross_share = base, relations, seed, cross_share
        self.hub = base.hubs(hub_share)
        n = len(base.names)
        lo, hi = np.minimum(base.heads, base.tails), np.maximum(base.heads, base.tails)
        self.pair = lo * n + hi  # one key per fact: both directions share it
        self.larger = hi
        self.hub_fact = self.hub[base.heads] & self.hub[base.tails]
        # facts in a seeded order, both directions of a fact next to each other
        self.order = np.lexsort((base.tails, base.types, base.heads, self.pair, mix(self.pair, seed)))
        per_shard = len(base.heads) - int(self.hub_fact.sum())
        extra = max(0, relations - len(base.heads))
        self.shards = 1 + (math.ceil(extra / per_shard) if per_shard else 0)

    def shard_rows(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Shard ``k``'s edges in the seeded order: head, head shard, type, tail, tail shard (-1: a hub)."""
        b = self.base
        keep = self.order if k == 0 else self.order[~self.hub_fact[self.order]]
        heads, types, tails = b.heads[keep], b.types[keep], b.tails[keep]
        hshard = np.where(self.hub[heads], -1, k)
        tshard = np.where(self.hub[tails], -1, k)
        if self.shards > 1:
            pair = self.pair[keep]
            u = mix(pair, self.seed * 1_000_003 + k)
            cross = (
                (u < np.uint64(int(self.cross_share * 2**64)))
                & (hshard >= 0)
                & (tshard >= 0)
                & (heads != tails)
            )
            other = (k + 1 + (mix(pair, self.seed * 7_919 + k) % np.uint64(self.shards - 1))).astype(np.int64)
            other %= self.shards
            moved = self.larger[keep]
            hshard = np.where(cross & (heads == moved), other, hshard)
            tshard = np.where(cross & (tails == moved), other, tshard)
        return heads, hshard, types, tails, tshard

    def rows(self) -> Iterator[list[tuple[str, str, str]]]:
        """Batches of name rows, exactly ``relations`` in all."""
        names, rtypes = self.base.names, self.base.rel_types
        left = self.relations
        for k in range(self.shards):
            heads, hshard, types, tails, tshard = self.shard_rows(k)
            take = min(left, len(heads))
            for a in range(0, take, _BATCH):
                z = min(take, a + _BATCH)
                yield [
                    (_name(names[h], hs), rtypes[r], _name(names[t], ts))
                    for h, hs, r, t, ts in zip(
                        heads[a:z].tolist(),
                        hshard[a:z].tolist(),
                        types[a:z].tolist(),
                        tails[a:z].tolist(),
                        tshard[a:z].tolist(),
                        strict=True,
                    )
                ]
            left -= take
            if not left:
                return


def _name(name: str, shard: int) -> str:
    """An entity's name in a shard: as in the re-crawl in shard 0 and for hubs, else ``NAME #k``."""
    return name if shard <= 0 else f"{name} #{shard}"


def write(gen: Generator, out: Path) -> int:
    """Write the generator's rows as a TSV with a ``head relation tail`` header; return the rows."""
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(("head", "relation", "tail"))
        for batch in gen.rows():
            writer.writerows(batch)
            n += len(batch)
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--relations", type=int, required=True, help="distinct relations to write")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--hub-share", type=float, default=HUB_SHARE)
    ap.add_argument("--cross-share", type=float, default=CROSS_SHARE)
    ap.add_argument(
        "--out", type=Path, required=True, help="the .tsv to write (keep it outside the repository)"
    )
    ap.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("KGMIND_DATA_DIR", "../shared/data"))
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    base = BaseKG.recrawl(args.data_dir)
    gen = Generator(base, args.relations, args.seed, args.hub_share, args.cross_share)
    n = write(gen, args.out)
    meta = {
        "out": str(args.out),
        "relations": n,
        "seed": args.seed,
        "shards": gen.shards,
        "base_relations": len(base.heads),
        "base_entities": len(base.names),
        "hubs": int(gen.hub.sum()),
        "hub_share": args.hub_share,
        "cross_share": args.cross_share,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(meta, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
