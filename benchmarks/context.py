"""Context recursion and search on real text nobody here wrote: the Python standard library's sources and docs.

    python benchmarks/context.py            # >= 5,000,000 tokens; search over >= 100,000 pieces
    python benchmarks/context.py --quick    # 500,000 tokens; search over 20,000 pieces
    python benchmarks/context.py --only tree --repeat 5   # the fastest of 5 interleaved baseline and tree runs

1. Baseline: tiktoken's raw encoding throughput (o200k_base, one thread) over the whole text.
2. Tree build: every file added to a Memory in one `add_all` (as `pipe ctx add` of many files does: one
   transaction; `--each` adds them one by one, a durable commit each), pieces of <= 200 tokens and no search
   indexes, then one `fit` of
   all of them into 25% of gpt-4o's window (32,000 tokens) with the extractive summarizer. Printed as
   tokens/s and as a RATIO to the baseline (1.0 would be as fast as tokenizing alone). With --repeat N the
   baseline and the build take turns N times, each build in a new Memory, and the fastest of each is compared
   (these machines are noisy: one pair of runs moved the ratio by a fifth from one invocation to the next).
3. Search: the same text cut into pieces of <= 50 tokens so there are >= 100,000 (20,000 with --quick), all
   indexed in tantivy. Embedding 100,000 pieces takes hours on 2 CPU cores, so the vector index holds real
   all-MiniLM-L6-v2 embeddings of --embed (EMBED_SAMPLE) pieces and, for every other piece, a copy of one of those with
   small noise (said in the output), in memory's VectorIndex (exact up to 50,000 vectors, an IVF above).
   p50/p95 over QUERIES queries for keyword, vector and hybrid, the query embeddings cached (as they are in use
   after a query's first time), and vector search the first time a query is seen (it embeds the query).
4. Peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from orgtree_lang.memory import Memory
from orgtree_lang.memory import memory as memory_module
from orgtree_lang.models.tokens import tiktoken_encoding

EMBED_SAMPLE = 500
QUERIES = ["parse command line arguments", "open a file for reading", "thread safe queue with timeout",
           "compress data with zlib", "format dates and times", "regular expression match groups",
           "send an email over smtp", "decode json text", "temporary directory cleanup", "hash a password",
           "how do I run a child process and read its output", "split a path into folder and file name",
           "unit test assertions", "read a csv file", "random numbers from a seed", "sort with a key function",
           "socket connect timeout", "http request headers", "xml element tree", "log messages to a file"]


def corpus(target_tokens: int) -> list[tuple[str, str]]:
    """(name, text) of stdlib .py and .rst/.txt files, in a fixed order, until about `target_tokens`."""
    encoding = tiktoken_encoding("gpt-4o")
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".rst", ".txt") and "site-packages" not in p.parts)
    out, total = [], 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if not text.strip():
            continue
        out.append((str(path.relative_to(root)), text))
        total += len(text) // 4  # a cheap estimate to stop; the exact count is the baseline below
        if total >= target_tokens * 1.15:
            break
    tokens = sum(len(encoding.encode_ordinary(t)) for _, t in out)
    if tokens < target_tokens:
        sys.exit(f"only {tokens} tokens of stdlib text found under {root}; need {target_tokens}")
    return out


def cpu_time() -> float:
    """CPU seconds of this process and of its children that have ended (the tree build's summary workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered) * 1000:7.2f} ms   p95 {p95 * 1000:7.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500k tokens and 20k search pieces")
    parser.add_argument("--only", choices=("tree", "search"), help="run one part (the baseline always runs)")
    parser.add_argument("--each", action="store_true", help="add the files one by one (a durable commit each)")
    parser.add_argument("--repeat", type=int, default=1, help="baseline and tree build runs, taken in turns; the "
                        "fastest of each is reported (default 1)")
    parser.add_argument("--embed", type=int, default=EMBED_SAMPLE, help=f"real embeddings (default {EMBED_SAMPLE})")
    args = parser.parse_args()
    target, pieces_wanted = (500_000, 20_000) if args.quick else (5_000_000, 100_000)
    texts = corpus(target)
    encoding = tiktoken_encoding("gpt-4o")

    start, cpu = time.perf_counter(), cpu_time()
    tokens = sum(len(encoding.encode_ordinary(t)) for _, t in texts)
    raw, raw_cpu = time.perf_counter() - start, cpu_time() - cpu
    print(f"text: {len(texts)} files, {tokens:,} tokens, {sum(len(t) for _, t in texts) / 1e6:.1f} M characters")
    print(f"baseline  tiktoken encode       {tokens / raw:12,.0f} tokens/s  ({raw:.2f} s, {raw_cpu:.2f} s of CPU)")

    if args.only != "search":
        _tree(texts, tokens, raw, raw_cpu, args.each, max(1, args.repeat))
    if args.only != "tree":
        _search(texts, pieces_wanted, args.embed)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory {peak:,.0f} MB")
    return 0


def _tree(texts: list[tuple[str, str]], tokens: int, raw: float, raw_cpu: float, each: bool, repeat: int) -> None:
    encoding = tiktoken_encoding("gpt-4o")
    builds = []
    for turn in range(repeat):
        if turn:  # the baseline again, between builds, so both see the same moments of the machine
            start, cpu = time.perf_counter(), cpu_time()
            for _, text in texts:
                encoding.encode_ordinary(text)
            raw, raw_cpu = min(raw, time.perf_counter() - start), min(raw_cpu, cpu_time() - cpu)
        builds.append(_build(texts, each))
    added = min(b[0] for b in builds)
    built = min(b[1] for b in builds)
    built_cpu = min(b[2] for b in builds)
    docs, view, again, second = builds[-1][3:]
    runs = f", fastest of {repeat} runs each" if repeat > 1 else ""
    if repeat > 1:
        print(f"baseline  fastest of {repeat}         {tokens / raw:12,.0f} tokens/s  ({raw:.2f} s, {raw_cpu:.2f} s of CPU)")
    print(f"tree      add (store + pieces)  {tokens / added:12,.0f} tokens/s  ({added:.2f} s)")
    print(f"tree      add + fit (whole)     {tokens / built:12,.0f} tokens/s  ({built:.2f} s)  "
          f"RATIO {raw / built:.3f} of tokenizing alone")
    # A durable commit waits for the disk (blob fsyncs, a state.db commit): the CPU ratio is the work itself, the
    # worker processes that write a big round of summaries (memory/summarize.py) included.
    print(f"          CPU {built_cpu:.2f} s: RATIO {raw_cpu / built_cpu:.3f} of tokenizing alone, by CPU time "
          f"({docs} documents, {'each a durable commit' if each else 'one durable commit'}{runs})")
    print(f"          view {view.tokens:,} of {view.budget:,} tokens, {view.levels} summary levels, "
          f"{view.summarized:,} summaries written")
    print(f"          second fit: {second:.2f} s, {again.summarized} summaries written")


def _build(texts: list[tuple[str, str]], each: bool) -> tuple:
    """One tree build in a new Memory: (add s, add + fit s, CPU s, documents, view, second view, second fit s)."""
    with tempfile.TemporaryDirectory() as folder, Memory(folder, index=False) as memory:
        start, cpu = time.perf_counter(), cpu_time()
        docs = [memory.add(text, name=name) for name, text in texts] if each else memory.add_all(texts)
        added = time.perf_counter() - start
        view = memory.fit(docs, "gpt-4o", 0.25)
        built, built_cpu = time.perf_counter() - start, cpu_time() - cpu
        second = time.perf_counter()
        again = memory.fit(docs, "gpt-4o", 0.25)
        return added, built, built_cpu, len(docs), view, again, time.perf_counter() - second


def _search(texts: list[tuple[str, str]], pieces_wanted: int, embed_sample: int) -> None:
    from orgtree_lang.memory.vectors import query_vector

    memory_module.PIECE_TOKENS = 50
    with tempfile.TemporaryDirectory() as folder, Memory(folder, vectors=False, notice=lambda m: None) as memory:
        start = time.perf_counter()
        for name, text in texts:
            memory.add(text, name=name)
            if len(memory.store.all_ids()) >= pieces_wanted:
                break
        ids = memory.store.all_ids()
        print(f"search    {len(ids):,} pieces indexed by keyword in {time.perf_counter() - start:.1f} s")
        if len(ids) < pieces_wanted:
            print(f"          fewer pieces than the {pieces_wanted:,} wanted")
        index = memory.search_index()
        vectors = _vectors(memory, ids, embed_sample)
        rows = {"keyword": [], "vector": [], "hybrid": [], "vector, first time (embeds the query)": []}
        for query in QUERIES:
            query_vector.cache_clear()
            index.vectors = vectors
            t = time.perf_counter()
            memory.search(query, 10, mode="vector")
            rows["vector, first time (embeds the query)"].append(time.perf_counter() - t)
        for _ in range(3):  # queries seen before: their embeddings come from the cache
            for query in QUERIES:
                index.vectors = None
                t = time.perf_counter()
                memory.search(query, 10, mode="keyword")
                rows["keyword"].append(time.perf_counter() - t)
                index.vectors = vectors
                for mode in ("vector", "hybrid"):
                    t = time.perf_counter()
                    memory.search(query, 10, mode=mode)
                    rows[mode].append(time.perf_counter() - t)
        index.vectors = None
        kind = "IVF" if vectors.approximate else "exact"
        for mode, samples in rows.items():
            print(f"search    {mode:8s} k=10  {percentiles(samples)}   ({len(samples)} queries, {len(ids):,} pieces, "
                  f"{kind} vector index)")


def _vectors(memory, ids: list[int], embed_sample: int):
    """A vector index over `ids`: real embeddings of a sample, noisy copies of them for the rest (see above)."""
    import numpy

    from orgtree_lang.memory.vectors import VectorIndex, embed

    vectors = VectorIndex(Path(memory.index_dir) / "bench")
    sample = ids[:: max(1, len(ids) // embed_sample)][:embed_sample]
    start = time.perf_counter()
    real = embed(vectors.model, [memory.text(n) for n in memory.store.many(sample)])
    took = time.perf_counter() - start
    rng = numpy.random.default_rng(0)
    fill = real[rng.integers(0, len(real), len(ids))] + rng.normal(0, 0.05, (len(ids), real.shape[1]))
    fill = (fill / numpy.linalg.norm(fill, axis=1, keepdims=True)).astype("float32")
    vectors.add(ids, fill)
    print(f"vectors   {len(sample):,} real embeddings in {took:.1f} s ({len(sample) / took:,.0f}/s); "
          f"{len(ids) - len(sample):,} noisy copies fill the index to {vectors.count():,}")
    return vectors


if __name__ == "__main__":
    sys.exit(main())
