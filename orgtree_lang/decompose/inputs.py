"""Big inputs of a block go to the workspace memory: the author reads a structural summary and a `ctx.fit` view
within its budget, and the generated module finds the rest with `ctx.search` / `ctx.expand`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.limits import output_size
from orgtree_lang.runtime.values import RecordValue, display, display_short

MEMORY_THRESHOLD = 16_000  # characters: a larger input goes to the workspace memory (`[decompose] memory_threshold`)
VIEW_SHARE = 0.4  # of the request's budget, for the views of the inputs that went to the workspace memory
MEMORY_READS = ("ctx.search", "ctx.expand", "ctx.fit")  # what every generated module may use, to read big inputs
_ITEMS = 3  # items shown in a structural summary
_ITEM_CHARS = 160


@dataclass(frozen=True)
class RememberedInput:
    """One input added to the workspace memory: its document, the tag that finds it, and its shape."""

    name: str
    document: int
    tag: str
    structure: str

    def how_to_read(self) -> str:
        return (f"It is too big to show whole; it is in the workspace memory as document #{self.document}, tagged "
                f"`{self.tag}`. The module may read it with `use ctx.search, ctx.expand`: "
                f'`ctx.search(QUERY, k=5, tag="{self.tag}", mode="keyword")` returns the best pieces (their `text`, '
                "`node` and `spans`, byte ranges in the input); `ctx.expand(NODE)` opens a node. (Keyword mode: "
                "a big input is not embedded for meaning search.)")


def input_tag(spec: AmbiguousSpec, name: str) -> str:
    """The tag of the memory document holding input `name` of `spec` (the same for every run of the block)."""
    return f"input:{spec.name}.{name}"


def is_big(value: Any, threshold: int) -> bool:
    return output_size(value, threshold + 1) > threshold


def input_text(value: Any) -> str:
    """What goes to memory for a value: text as it is; a list one item a line; a dict or record one entry a line
    (so that pieces are cut between items)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(display(item, True) for item in value)
    fields = value.fields if isinstance(value, RecordValue) else value
    if isinstance(fields, dict):
        return "\n".join(f"{display(key, True)}: {display(item, True)}" for key, item in fields.items())
    return display(value, True)


def structure(value: Any) -> str:
    """A structural summary of a value: type and size, keys or fields with their types, and the first few items."""
    from orgtree_lang.syntax.types import type_of_value

    if isinstance(value, str):
        lines = value.count("\n") + 1
        return (f"str of {len(value):,} characters in {lines:,} lines; it starts: "
                f"{display_short(value, _ITEM_CHARS)}")
    if isinstance(value, list):
        kinds: dict[str, int] = {}
        for item in value:
            kinds[str(type_of_value(item))] = kinds.get(str(type_of_value(item)), 0) + 1
        text = f"list of {len(value):,} items; item types: " + ", ".join(
            f"{kind} ({count:,})" for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1])[:5])
        fields = _fields([item.fields if isinstance(item, RecordValue) else item for item in value[:1000]
                          if isinstance(item, (dict, RecordValue))])
        if fields:
            text += f"; keys of its dicts/records (in the first 1,000): {fields}"
        shown = "\n".join(f"  [{i}] {display_short(item, _ITEM_CHARS)}" for i, item in enumerate(value[:_ITEMS]))
        return f"{text}\nfirst items:\n{shown}" if shown else text
    if isinstance(value, (dict, RecordValue)):
        entries = value.fields if isinstance(value, RecordValue) else value
        kind = f"record {value.record_name}" if isinstance(value, RecordValue) else "dict"
        text = f"{kind} of {len(entries):,} entries; keys: {_fields([entries], limit=30)}"
        shown = "\n".join(f"  {display_short(key, 60)}: {display_short(item, _ITEM_CHARS)}"
                          for key, item in itertools.islice(entries.items(), _ITEMS))
        return f"{text}\nfirst entries:\n{shown}" if shown else text
    return f"{type_of_value(value)}: {display_short(value, _ITEM_CHARS)}"


def _fields(mappings: list[dict], limit: int = 20) -> str:
    """`key (type)` for the keys of `mappings`, most frequent first, at most `limit`."""
    from orgtree_lang.syntax.types import type_of_value

    seen: dict[str, tuple[int, set[str]]] = {}
    for mapping in mappings:
        for key, item in itertools.islice(mapping.items(), 200):
            count, types = seen.get(str(key), (0, set()))
            seen[str(key)] = (count + 1, types | {str(type_of_value(item))})
    ranked = sorted(seen.items(), key=lambda kv: -kv[1][0])
    text = ", ".join(f"{key} ({' | '.join(sorted(types))})" for key, (_, types) in ranked[:limit])
    return text + (f", ... ({len(ranked):,} keys)" if len(ranked) > limit else "")


def remember_inputs(spec: AmbiguousSpec, inputs: dict[str, Any], workspace: Path, threshold: int,
                    memory=None) -> dict[str, RememberedInput]:
    """Add each input bigger than `threshold` characters to the workspace memory, under its tag, replacing what
    an earlier run put there for the same input (so the tag finds this run's value only)."""
    from orgtree_lang.memory.memory import Memory

    big = {name: value for name, value in inputs.items()
           if isinstance(value, (str, list, dict, RecordValue)) and is_big(value, threshold)}
    if not big:
        return {}
    own = memory is None
    # Keyword-only: embedding megabytes for meaning search would take minutes; the module searches by keyword.
    memory = memory or Memory(workspace, vectors=False)
    try:
        remembered = {}
        for name, value in big.items():
            tag = input_tag(spec, name)
            text = input_text(value)
            stale = [doc for doc in memory.documents() if tag in doc.tags]
            current = next((doc for doc in stale if memory.text(doc) == text), None)
            for doc in stale:
                if doc is not current:
                    memory.delete(doc)
            if current is None and not text.strip():
                continue  # nothing to remember: the tag finds nothing, as the value holds nothing
            if current is None:
                current = memory.add(text, name=f"input `{name}` of block `{spec.name}`", tags=("input", tag))
            remembered[name] = RememberedInput(name, current.id, tag, structure(value))
        return remembered
    finally:
        if own:
            memory.close()


def input_views(remembered: dict[str, RememberedInput], workspace: Path, model: str, window: int,
                tokens: int, summarizer=None) -> dict[str, str]:
    """For each remembered input, its structure, how to read it, and a `ctx.fit` view in `tokens` tokens at most
    (shared evenly; an input whose share is under the memory's smallest view gets none), its summaries written by
    `summarizer` (decompose/protocol.py's: the run's model when one is configured)."""
    from orgtree_lang.memory.budget import BudgetError
    from orgtree_lang.memory.memory import Memory

    if not remembered:
        return {}
    each = tokens // len(remembered)
    views = {}
    with Memory(workspace, vectors=False) as memory:
        for name, item in remembered.items():
            text = f"{item.structure}\n  {item.how_to_read()}"
            try:
                view = memory.fit([item.document], model, each / window, context_window=window,
                                  summarizer=summarizer).text
            except BudgetError:
                view = ""
            views[name] = text + (f"\n  A view of it (summaries labelled [#ID ...] open with ctx.expand):\n"
                                  f"{_indent(view)}" if view else "")
    return views


def described_inputs(spec: AmbiguousSpec, inputs: dict[str, Any], workspace: Path, threshold: int, model: str,
                     window: int, budget: int, summarizer=None) -> dict[str, tuple[str, str]]:
    """The inputs too big to show, added to the workspace memory, as (with a view, without) for the request.

    Their views share VIEW_SHARE of the request's `budget`, so the request fits whatever the inputs' size."""
    remembered = remember_inputs(spec, inputs, workspace, threshold)
    views = input_views(remembered, workspace, model, window, int(budget * VIEW_SHARE), summarizer)
    return {name: (views[name], f"{item.structure}\n  {item.how_to_read()}") for name, item in remembered.items()}


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
