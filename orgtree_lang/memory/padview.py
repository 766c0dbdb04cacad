"""What an agent reads of the scratchpad: its newest notes verbatim plus a summary of the rest, or a focused selection."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.memory.budget import Budget
from orgtree_lang.memory.memory import Memory
from orgtree_lang.memory.nodes import Node
from orgtree_lang.memory.scratchpad import Note, Scratchpad
from orgtree_lang.memory.summarize import Summarizer, content_words
from orgtree_lang.memory.tokenizer import Tokenizer

VERBATIM_SHARE = 0.05   # the newest notes, read as written
SUMMARY_SHARE = 0.10    # everything older, through the context recursion
FOCUS_SHARE = VERBATIM_SHARE + SUMMARY_SHARE
FOCUS_BEARING = 0.25  # the share of a task's content words an older note must have to be read instead (pad_read)
# Older notes go into the memory in blocks of this many (by seq), so a block's text, pieces and summaries
# never change once it is full and every later view reuses them from the cache.
BLOCK_NOTES = 50
PAD_TAG = "pad"
SUMMARY_HEADING = "## Scratchpad, earlier notes (summarized; expand a [#id] to read the original)"
VERBATIM_HEADING = "## Scratchpad, latest notes (you are {agent})"
FOCUS_HEADING = "## Scratchpad, the notes most relevant to: {query} (you are {agent})"


@dataclass
class PadView:
    """The scratchpad text for one reader, and how it was made, so budgets can be checked."""

    text: str
    verbatim_tokens: int       # tokens of the verbatim part, heading included
    summary_tokens: int        # tokens of the summarized part, heading included (0 when nothing is older)
    verbatim_budget: int
    summary_budget: int
    first_verbatim_seq: int    # the oldest note read (at least partly) verbatim; 0 when the pad is empty
    summarized: int = 0        # summaries written for this view (0 when all came from the cache)
    nodes: tuple[Node, ...] = ()
    mode: str = "recent"       # recent: newest verbatim + older summarized; focused: the notes most relevant
    last_seq: int = 0          # the newest note there was when the view was made


def _tail(tokenizer: Tokenizer, text: str, limit: int) -> str:
    """The longest suffix of `text` with at most `limit` tokens, starting on a whole token and character."""
    if limit <= 0:
        return ""
    if tokenizer.encoding is None:
        return text[-limit * 4:]
    ids = tokenizer.encoding.encode_ordinary(text)
    if len(ids) <= limit:
        return text
    data = b"".join(tokenizer.encoding.decode_tokens_bytes(ids[-limit:]))
    while data and (data[0] & 0xC0) == 0x80:  # a character cut at its start: drop its continuation bytes
        data = data[1:]
    suffix = data.decode("utf-8", errors="ignore")
    while suffix and tokenizer.count(suffix) > limit:  # re-encoding can merge differently
        suffix = suffix[1:]
    return suffix


def _block_text(notes: list[Note]) -> str:
    return "\n".join(note.render() for note in notes)


def _block_documents(memory: Memory, notes: list[Note]) -> list[Node]:
    """The older notes as memory documents, one per block of BLOCK_NOTES seqs; stale partial blocks are dropped."""
    blocks: dict[int, list[Note]] = {}
    for note in notes:
        blocks.setdefault((note.seq - 1) // BLOCK_NOTES, []).append(note)
    documents = []
    for index, block in sorted(blocks.items()):
        name = f"scratchpad notes #{block[0].seq}-#{block[-1].seq}"
        documents.append(memory.add(_block_text(block), name=name, tags=[PAD_TAG]))
    current = {doc.id for doc in documents}
    starts = {doc.name.split("-")[0] for doc in documents}
    for doc in memory.documents():
        # A block that was still filling up when an earlier view was made: same first note, fewer notes.
        if PAD_TAG in doc.tags and doc.id not in current and doc.name.split("-")[0] in starts:
            memory.delete(doc)
    return documents


def _window(model: object, context_window: int | None) -> tuple[str, int]:
    budget = Budget.for_model(model, 1.0, context_window)
    return budget.model, budget.window


def _newest(notes: list[Note], tokenizer: Tokenizer, room: int) -> tuple[list[Note], str, int]:
    """(the notes older than the verbatim part, the verbatim text, the seq of its oldest note): whole notes, newest
    first, while they fit `room` tokens; then the end of the note at the boundary, if any of it fits."""
    kept: list[str] = []
    first = len(notes)
    while first > 0 and tokenizer.count("\n".join([notes[first - 1].render(), *kept])) <= room:
        first -= 1
        kept.insert(0, notes[first].render())
    older = notes[:first]
    newest = "\n".join(kept)
    first_seq = notes[first].seq if kept else 0
    if older:
        part = _tail(tokenizer, "\n".join([older[-1].render(), *kept]), room)
        if len(part) > len(newest) + (1 if kept else 0):
            # The boundary note does not fit whole: its end still belongs to the newest text.
            newest, first_seq = part, older[-1].seq
    return older, newest, first_seq


def pad_context(pad: Scratchpad, memory: Memory, agent: str, model: object, *, context_window: int | None = None,
                summarizer: Summarizer | None = None) -> PadView:
    """The newest notes verbatim within 5% of `model`'s window, everything older summarized within 10% more.

    The verbatim part takes whole notes, newest first, while they fit; the note at the boundary contributes
    its end if it does not fit whole (it is also in the summarized part, whole, so nothing is lost). The
    summarized part is the context recursion's view of the older notes, whose summaries are cached."""
    name, window = _window(model, context_window)
    verbatim_budget, summary_budget = int(window * VERBATIM_SHARE), int(window * SUMMARY_SHARE)
    tokenizer = Tokenizer(name)
    notes = pad.notes()
    if not notes:
        return PadView("", 0, 0, verbatim_budget, summary_budget, 0)
    heading = VERBATIM_HEADING.format(agent=agent)
    older, newest, first_seq = _newest(notes, tokenizer, verbatim_budget - tokenizer.count(heading + "\n"))
    verbatim = f"{heading}\n{newest}"
    summary, summarized, nodes = "", 0, ()
    if older:
        room = summary_budget - tokenizer.count(SUMMARY_HEADING + "\n")
        view = memory.fit(_block_documents(memory, older), name, share=1.0, context_window=room,
                          summarizer=summarizer)
        summary, summarized, nodes = f"{SUMMARY_HEADING}\n{view.text}", view.summarized, tuple(view.nodes)
    text = f"{summary}\n\n{verbatim}" if summary else verbatim
    return PadView(text, tokenizer.count(verbatim), tokenizer.count(summary) if summary else 0,
                   verbatim_budget, summary_budget, first_seq, summarized, nodes, last_seq=notes[-1].seq)


def _note_spans(memory: Memory, notes: list[Note]) -> dict[int, list[tuple[int, int, Note]]]:
    """For each block document: (byte start, byte end, note) of every note in its text."""
    spans: dict[int, list[tuple[int, int, Note]]] = {}
    for doc in _block_documents(memory, notes):
        first, last = (int(part.lstrip("#")) for part in doc.name.rsplit(" ", 1)[1].split("-"))
        offset, rows = 0, []
        for note in (n for n in notes if first <= n.seq <= last):
            size = len(note.render().encode("utf-8"))
            rows.append((offset, offset + size, note))
            offset += size + 1  # the newline between notes
        spans[doc.id] = rows
    return spans


def _relevant_notes(memory: Memory, notes: list[Note], query: str, hits: int, mode: str) -> list[Note]:
    """The notes the pad's search (`mode`: hybrid, keyword or vector) finds for `query`, most relevant first."""
    from orgtree_lang.memory.hybrid import search_tagged

    spans = _note_spans(memory, notes)
    found: dict[int, Note] = {}
    for hit in search_tagged(memory, query, hits, tags=[PAD_TAG], levels=[0], mode=mode):
        for span in hit.spans:  # pieces (level 0): original text in small spans, each over a note or a few
            for start, end, note in spans.get(span.document, []):
                if start < span.end and span.start < end:
                    found.setdefault(note.seq, note)
    return list(found.values())


def pad_focus(pad: Scratchpad, memory: Memory, agent: str, query: str, model: object, *,
              context_window: int | None = None, hits: int = 40, mode: str = "hybrid") -> PadView:
    """Instead of the newest notes and a summary, the notes most relevant to `query`, whole, within 15% of the
    window, shown in the order they were written. Relevance is hybrid search over every note (`mode`: keyword and
    meaning where the embedding model is installed, or one of them); the best go first until the budget is full."""
    name, window = _window(model, context_window)
    budget = int(window * FOCUS_SHARE)
    tokenizer = Tokenizer(name)
    notes = pad.notes()
    if not notes:
        return PadView("", 0, 0, budget, 0, 0, mode="focused")
    heading = FOCUS_HEADING.format(query=" ".join(query.split())[:200], agent=agent)
    chosen: dict[int, Note] = {}
    used = tokenizer.count(heading)
    for note in _relevant_notes(memory, notes, query, hits, mode):
        cost = tokenizer.count("\n" + note.render())
        if used + cost <= budget:
            chosen[note.seq] = note
            used += cost
    picked = [chosen[seq] for seq in sorted(chosen)]
    text = "\n".join([heading, *(note.render() for note in picked)])
    return PadView(text, tokenizer.count(text), 0, budget, 0, picked[0].seq if picked else 0, mode="focused",
                   last_seq=notes[-1].seq)


def pad_read(pad: Scratchpad, memory: Memory, agent: str, task: str, model: object, *,
             context_window: int | None = None, summarizer: Summarizer | None = None, mode: str = "hybrid") -> PadView:
    """What an agent working on `task` reads of the scratchpad: `pad_context` (the newest notes in 5% of the window,
    the older ones summarized in 10% more), unless the note most relevant to the task (hybrid search) is no longer
    among the newest read verbatim; then `pad_focus` on the task replaces both, in the same 15%, so that older note is
    read whole (the design's special case). With every note read verbatim nothing is searched."""
    def recent() -> PadView:
        return pad_context(pad, memory, agent, model, context_window=context_window, summarizer=summarizer)

    name, window = _window(model, context_window)
    tokenizer = Tokenizer(name)
    notes = pad.notes()
    room = int(window * VERBATIM_SHARE) - tokenizer.count(VERBATIM_HEADING.format(agent=agent) + "\n")
    wanted = content_words(task)
    older_notes, _, first_verbatim = _newest(notes, tokenizer, room) if notes else ([], "", 0)
    if not older_notes or not wanted:
        return recent()

    def bearing(note: Note) -> float:
        return len(wanted & content_words(note.text)) / len(wanted)

    # The search finds the candidates (by keyword and meaning); a note must also share a quarter of the task's
    # content words, and more than any note read verbatim, to count as more relevant: a common word is no reason.
    newest = max((bearing(n) for n in notes if n.seq >= first_verbatim), default=0.0)
    older = [n for n in _relevant_notes(memory, notes, task, 10, mode) if n.seq < first_verbatim]
    if any(bearing(n) >= FOCUS_BEARING and bearing(n) > newest for n in older):
        return pad_focus(pad, memory, agent, task, model, context_window=context_window, mode=mode)
    return recent()
