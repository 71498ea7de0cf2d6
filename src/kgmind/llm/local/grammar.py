"""llama.cpp's grammar sampling, checking the greedy token first (as llama.cpp's own sampler does).

llama-cpp-python puts the grammar sampler in the chain ahead of ``greedy``, so every
generated token runs the grammar over all 151k vocabulary entries (a fifth of the 0.5B
model's time on 12 replayed hypothesis and answer calls, 146 -> 116 s). llama.cpp's
own sampler (``common/sampling.cpp``) first checks only the token it would pick and
masks the whole vocabulary only when the grammar rejects it. Under greedy decoding
that picks the same token, so answers are unchanged (tested against the full-mask
chain); :class:`GrammarCheckingLlama` does the same inside llama-cpp-python's chain,
between the penalties and ``greedy``. It serves the calls the schema decoder does not
write (``KGMIND_LOCAL_DECODER=grammar``, schemas outside its subset).
"""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import Llama

__all__ = ["GrammarAfterGreedy", "GrammarCheckingLlama"]


class GrammarAfterGreedy:
    """A llama.cpp sampler that checks the greedy token against the grammar before masking the vocabulary."""

    def __init__(self, vocab: Any, grammar: Any) -> None:
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._grammar:
            raise ValueError("llama.cpp could not parse the grammar built from the answer schema")
        self._one: Any = (llama_cpp.llama_token_data * 1)()  # ctypes: fields take plain ints
        self._one_array = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        self.masked = 0  # tokens for which the whole vocabulary had to be masked
        # the C side calls these through the chain: keep the ctypes callbacks alive with self
        self._callbacks = (
            llama_cpp.llama_sampler_i_apply(self._apply),
            llama_cpp.llama_sampler_i_accept(self._accept),
            llama_cpp.llama_sampler_i_reset(self._reset),
        )
        iface = llama_cpp.llama_sampler_i()
        iface.apply, iface.accept, iface.reset = self._callbacks
        self._iface = iface
        self._sampler = llama_cpp.llama_sampler()
        self._sampler.iface = ctypes.pointer(iface)
        self._sampler.ctx = None

    def _apply(self, _smpl: Any, cur_p: Any) -> None:
        """Mask the candidates by the grammar only when it rejects the greedy pick."""
        cands = cur_p.contents
        view = np.ctypeslib.as_array(cands.data, shape=(cands.size,))
        best = int(np.argmax(view["logit"]))  # the first maximum, as llama.cpp's greedy takes it
        self._one[0].id = int(view["id"][best])
        self._one[0].logit = float(view["logit"][best])
        self._one_array.size, self._one_array.selected, self._one_array.sorted = 1, -1, False
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(self._one_array))
        if not np.isfinite(self._one[0].logit):
            self.masked += 1
            llama_cpp.llama_sampler_apply(self._grammar, cur_p)

    def _accept(self, _smpl: Any, token: int) -> None:
        llama_cpp.llama_sampler_accept(self._grammar, token)

    def _reset(self, _smpl: Any) -> None:
        llama_cpp.llama_sampler_reset(self._grammar)

    def get_sampler(self) -> Any:
        """The ``llama_sampler*`` to add to a chain (the chain must not free it)."""
        return ctypes.pointer(self._sampler)

    def __del__(self) -> None:
        if getattr(self, "_grammar", None):
            llama_cpp.llama_sampler_free(self._grammar)
            self._grammar = None


class GrammarCheckingLlama(Llama):
    """``llama_cpp.Llama`` whose greedy, grammar-held sampling uses :class:`GrammarAfterGreedy`."""

    def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
        grammar = kwargs.get("grammar")
        greedy_with_grammar = grammar is not None and kwargs.get("temp") == 0.0
        if args or not greedy_with_grammar or kwargs.get("logits_processor") is not None:
            return super()._init_sampler(*args, **kwargs)
        chain = super()._init_sampler(**{**kwargs, "grammar": None})  # [penalties, greedy]
        last = llama_cpp.llama_sampler_chain_n(chain.sampler) - 1
        tail = llama_cpp.llama_sampler_chain_get(chain.sampler, last) if last >= 0 else None
        # a chain laid out otherwise (another llama-cpp-python version): its own grammar step
        if tail is None or llama_cpp.llama_sampler_name(tail) != b"greedy":
            chain.close()
            return super()._init_sampler(**kwargs)
        greedy = llama_cpp.llama_sampler_chain_remove(chain.sampler, last)
        checker = GrammarAfterGreedy(self._model.vocab, grammar)
        llama_cpp.llama_sampler_chain_add(chain.sampler, checker.get_sampler())
        chain.custom_samplers.append((last, checker))  # removed, not freed, when the chain is freed
        llama_cpp.llama_sampler_chain_add(chain.sampler, greedy)
        self.last_grammar_sampler = checker
        return chain
