"""Calib experiment wrapper (before the change shipped): the evidence budget in the local model's tokens.

Usage: python model_tokens.py ../2026-11-24-grounded-calib/run_variant.py METHODS LIMIT SEED OUT
(``select_evidence`` gets the local model's tokenizer; every other argument goes to the driver).
"""

import os
import runpy
import sys
from typing import Any

import kgmind.retrievers.aggregate as agg

_select = agg.select_evidence
_client: Any = None


def _tokenizer(text: str) -> list[int]:
    global _client
    if _client is None:
        from kgmind.llm import get_chat_model

        _client = get_chat_model(os.environ.get("KGV_TOK_MODEL", "local")).client  # type: ignore[attr-defined]
    return list(_client.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def select(candidates: Any, budget: int, *, tokenizer: Any = None, **kw: Any) -> Any:
    return _select(candidates, budget, tokenizer=tokenizer or _tokenizer, **kw)


agg.select_evidence = select
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
