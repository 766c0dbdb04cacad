"""Context recursion: documents and a token budget in, a View out: the documents whole if they fit, else
summaries of pieces, summaries of summaries, and so on until the stitched result fits."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from orgtree_lang.memory.budget import Budget, BudgetError
from orgtree_lang.memory.nodes import Node
from orgtree_lang.memory.split import byte_ranges, split_text
from orgtree_lang.memory.summarize import Summarizer, fit_counted, summarize_many
from orgtree_lang.memory.tokenizer import Tokenizer

if TYPE_CHECKING:
    from orgtree_lang.memory.memory import Memory

# A summary gets 1/FANOUT of the budget, so each round shrinks the text about FANOUT/2 times (groups are at
# least half full) and the tree is about log(total / budget) / log(FANOUT / 2) levels deep.
FANOUT = 8
# Leaf pieces are at most this many tokens (fewer when the budget is smaller), small enough to search well.
PIECE_TOKENS = 200
SEPARATOR = "\n\n"
MAX_ROUNDS = 64


@dataclass
class View:
    """What fits: the text to put in a prompt, the nodes it is made of (expand them for detail), and the numbers."""

    text: str
    nodes: list[Node]
    tokens: int
    budget: int
    summarized: int = 0          # summaries written by the summarizer for this view (0 when all were cached)
    levels: int = 0              # 0: the documents themselves; n: summaries n levels above the pieces
    documents: list[Node] = field(default_factory=list)


def label(node: Node) -> str:
    """The line that introduces a node in a view, so a reader can ask for it by id (`ctx.expand`)."""
    return f"[#{node.id} {node.kind} L{node.level}]"


class TreeBuilder:
    """Builds (and reuses) the summary nodes that make some documents fit one budget."""

    def __init__(self, memory: Memory, budget: Budget, summarizer: Summarizer,
                 on_new: Callable[[list[Node]], None] | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.memory = memory
        self.budget = budget
        self.summarizer = summarizer
        self.tokenizer = Tokenizer(budget.model)
        self.limit = budget.tokens
        self.target = max(8, self.limit // FANOUT)
        self.summarized = 0
        self.on_new = on_new or (lambda nodes: None)
        self.progress = progress  # (level just built, summaries written so far), after each round
        self._blob: tuple[str, bytes] = ("", b"")

    def render(self, nodes: list[Node]) -> str:
        if len(nodes) == 1 and nodes[0].kind == "document":
            return self.memory.text(nodes[0])
        return SEPARATOR.join(f"{label(n)}\n{self.memory.text(n)}" for n in nodes)

    def _fits(self, nodes: list[Node]) -> tuple[bool, str, int]:
        # Stored counts may come from another model's tokenizer and ignore joins: they only decide whether
        # an exact count is worth making; the exact count of the rendered text decides.
        estimate = sum(n.tokens + 8 for n in nodes)
        if estimate > 2 * self.limit + 64:
            return False, "", estimate
        text = self.render(nodes)
        tokens = self.tokenizer.count(text)
        return tokens <= self.limit, text, tokens

    def fit(self, documents: list[Node]) -> View:
        fits, text, tokens = self._fits(documents)
        if fits:
            return View(text, list(documents), tokens, self.limit, 0, 0, list(documents))
        current = self.memory.pieces_of_all(documents, min(PIECE_TOKENS, self.limit), self.tokenizer)
        levels = 0
        for _ in range(MAX_ROUNDS):
            fits, text, tokens = self._fits(current)
            if fits:
                return View(text, current, tokens, self.limit, self.summarized, levels, list(documents))
            before = sum(n.tokens for n in current)
            fresh: list[Node] = []
            current = self._round(self._groups(current), fresh)
            self.on_new(fresh)
            levels += 1
            if self.progress is not None:
                self.progress(levels, self.summarized)
            if sum(n.tokens for n in current) >= before:
                raise BudgetError(f"summarizing did not shorten the text ({before} tokens stayed "
                                  f"{sum(n.tokens for n in current)}); the budget of {self.limit} tokens is too "
                                  f"small for summaries of {self.target} tokens with their labels")
        raise BudgetError(f"the text did not fit {self.limit} tokens after {MAX_ROUNDS} rounds of summaries")

    def _groups(self, nodes: list[Node]) -> list[list[Node]]:
        """Consecutive runs of nodes whose joined text is at most the budget (by their counts)."""
        groups: list[list[Node]] = []
        total = 0
        for node in nodes:
            cost = node.tokens + 1
            if groups and total + cost <= self.limit:
                groups[-1].append(node)
                total += cost
            else:
                groups.append([node])
                total = cost
        return groups

    def _text(self, node: Node) -> str:
        """`memory.text(node)`, reading each blob once in a row: a document's pieces come one after another."""
        if node.blob != self._blob[0]:
            self._blob = (node.blob, self.memory.blobs.read(node.blob))
        return self._blob[1][node.start:node.end].decode("utf-8")

    def _round(self, groups: list[list[Node]], fresh: list[Node]) -> list[Node]:
        """One level of the tree: a node per group, the summaries this round needs written in one batch (a model
        summarizer writes them side by side)."""
        out: list[Node | None] = []
        wanted: list[tuple[int, list[Node], str, str]] = []  # (place, group, source, cache key)
        for group in groups:
            if len(group) == 1 and group[0].tokens <= self.target:
                out.append(group[0])  # already as short as a summary would be: carry it up as it is
                continue
            existing = self.memory.store.by_key(self._node_key(group))
            if existing is not None:
                out.append(existing)
                continue
            source = SEPARATOR.join(self._text(n) for n in group)
            digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
            out.append(None)
            key = f"{digest}:{self.summarizer.id}:{self.target}:{self.budget.model}"
            wanted.append((len(out) - 1, group, source, key))
        # Each distinct text once (a repeated passage makes groups with the same text), and none already cached.
        unique = {w[3]: w for w in wanted}
        missing = [w for w in unique.values() if self.memory.store.cached_summary(w[3]) is None]
        if missing:
            def keep(index: int, raw: str) -> None:
                self._cache_text(missing[index], raw)

            texts = summarize_many(self.summarizer, [w[2] for w in missing], self.target, self.tokenizer, keep)
            self._cache_texts(list(zip(missing, texts)))
        if wanted:
            self._insert_all([(place, group, key) for place, group, _source, key in wanted], out, fresh)
        return out

    def _node_key(self, group: list[Node]) -> str:
        return f"summary:{self.summarizer.id}:{self.target}:{','.join(str(n.id) for n in group)}"

    def _cache_text(self, item: tuple[int, list[Node], str, str], raw: str) -> None:
        """Cut a summary to its target and keep it in the text cache (an empty answer keeps the source's start)."""
        self._cache_texts([(item, raw)])

    def _cache_texts(self, answers: list[tuple[tuple[int, list[Node], str, str], str]]) -> None:
        """`_cache_text` of each (item, answer) not cached yet, in one transaction, their blobs written side by side."""
        todo = [(cache_key, raw if raw.strip() else source) for (_place, _group, source, cache_key), raw in answers
                if self.memory.store.cached_summary(cache_key) is None]
        if not todo:
            return

        def cut(item: tuple[str, str]) -> tuple[str, bytes, int]:
            text, tokens = fit_counted(item[1], self.target, self.tokenizer)
            return item[0], text.encode("utf-8"), tokens

        if len(todo) < 8:
            rows = list(map(cut, todo))
        else:  # counting is mostly tiktoken's, which lets go of the GIL: two threads, this one waiting
            with ThreadPoolExecutor(2, thread_name_prefix="pipe-summary-count") as pool:
                rows = list(pool.map(cut, todo))
        blobs = self.memory.blobs.put_many([data for _key, data, _tokens in rows])
        with self.memory.store.write() as db:
            for (cache_key, _data, tokens), blob in zip(rows, blobs):
                self.memory.store.cache_summary(db, cache_key, blob, tokens)
        self.summarized += len(rows)

    def _insert_all(self, wanted: list[tuple[int, list[Node], str]], out: list[Node | None], fresh: list[Node]) -> None:
        """A summary node over each group (place in `out`, group, cache key), all in one transaction."""
        store = self.memory.store
        made = []
        for place, group, cache_key in wanted:
            blob, tokens = store.cached_summary(cache_key)
            covers: set[int] = set()
            for n in group:  # a piece covers its document; a summary what the store says
                if n.kind == "piece":
                    covers.add(n.document)
                else:
                    covers.update(store.covered_documents(n.id))
            made.append((place, group, blob, self.memory.blobs.path(blob).stat().st_size, tokens, covers))
        with store.write() as db:
            for place, group, blob, size, tokens, covers in made:
                node = store.insert(db, "summary", 1 + max(n.level for n in group), blob, 0, size, tokens,
                                    self._node_key(group), children=[n.id for n in group], covers=covers)
                out[place] = node
                fresh.append(node)
            store.bump(db)


def split_document(text: str, limit: int, tokenizer: Tokenizer, ids=None) -> list[tuple[int, int, int]]:
    """(byte start, byte end, tokens) of the pieces of a document's text, each at most `limit` tokens (`ids`: its
    token ids, when made already)."""
    cuts = split_text(text, limit, tokenizer, ids)
    return [(a, b, cut.tokens) for (a, b), cut in zip(byte_ranges(text, cuts), cuts)]
