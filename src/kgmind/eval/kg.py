"""The KG an evaluation reads: each data set's default store and KG file, imported into an empty store.

Also the documents of the Chinese data sets' document baselines, which are written from
a KG (:func:`documents_kg`), since those data sets have no document corpus of their own.
"""

from __future__ import annotations

from kgmind.eval import datasets as ds
from kgmind.eval.config import EvalConfig, ItemSource

__all__ = ["CHINESE_DATASETS", "DEFAULT_KGS", "default_kg", "documents_kg", "prepare_store"]

#: The KG a data set is evaluated on when no ``--store`` is given: store name under
#: ``$KGMIND_HOME``, data file role (:data:`kgmind.eval.datasets.DEFAULT_FILES`), importer format.
DEFAULT_KGS: dict[str, tuple[str, str, str]] = {
    "genmedgpt5k": ("eval-emckg-full", "emckg", "chatdoctor"),
    "cmcqa": ("eval-cmckg-recrawl", "recrawl", "recrawl-json"),
}

#: Chinese data sets: their document baselines search documents written from the Chinese KG.
CHINESE_DATASETS: frozenset[str] = frozenset({"cmcqa", "explaincpe", "medical_dialogue_zh"})


def default_kg(cfg: ItemSource) -> tuple[str | None, str | None]:
    """The KG file and format a run imports into an empty store: ``cfg.kg``, else the data set's default.

    ``(None, cfg.kg_format)`` for a data set without a default KG and no ``cfg.kg``.
    """
    default = DEFAULT_KGS.get(cfg.dataset)
    if cfg.kg is None and default is not None:
        return str(ds.default_path(default[1])), cfg.kg_format or default[2]
    return cfg.kg, cfg.kg_format


def documents_kg(cfg: EvalConfig) -> tuple[str, str, str] | None:
    """The KG whose diseases are the documents of a Chinese data set (``None``: English documents).

    ``--kg`` (with ``--kg-format``) when given, else the CMCKG re-crawl that CMCQA is
    evaluated on; ``--docs`` overrides both (the runner passes it as ``docs_dir``).
    """
    if cfg.dataset not in CHINESE_DATASETS:
        return None
    if cfg.kg:
        return (cfg.kg, cfg.kg_format or "chatdoctor", "zh")
    _, role, fmt = DEFAULT_KGS["cmcqa"]
    return (str(ds.default_path(role)), fmt, "zh")


def prepare_store(cfg: ItemSource) -> str | None:
    """Open the KG store for the KG methods, importing the KG into it when it is empty.

    Without ``cfg.store`` a data set of :data:`DEFAULT_KGS` gets its own store and KG
    (GenMedGPT-5k: EMCKG-full from ``emckg/format_dataset.csv``; CMCQA: the CMCKG re-crawl
    ``cmckg/recrawl_full``, whose first import takes about a minute); other data sets need
    ``--store``. ``cfg.kg`` replaces the default KG file (format ``cfg.kg_format``, default
    ``chatdoctor``).

    Returns:
        The store URI, or ``None`` when no KG is configured.

    """
    from kgmind.settings import default_store_uri

    uri, kg, fmt = cfg.store, cfg.kg, cfg.kg_format
    default = DEFAULT_KGS.get(cfg.dataset)
    if uri is None and default is not None:
        uri = default_store_uri(default[0])
        kg, fmt = default_kg(cfg)
    if uri is None:
        return None
    from kgmind.stores.factory import open_store

    store = open_store(uri, create=bool(kg))  # only an import may create a store
    if kg and store.stats().entities_total == 0:
        from kgmind.importers import import_kg

        import_kg(kg, fmt or "chatdoctor", store, progress=False)
    return store.uri
