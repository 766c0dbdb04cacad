"""`pipe ctx add | search | show`: put files into a workspace's memory, search it, and show a node."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from orgtree_lang.cli.options import EXIT_OK, add_sub_verbs, add_verb, add_workspace_option, models_from_args

BAR_WIDTH = 30
LARGE_INPUT = 256 * 1024  # bytes; smaller inputs index too fast for a progress bar to help
_WORKSPACE_HELP = "the workspace whose .orgtree holds the memory (default: this folder)"


def register(commands) -> None:
    ctx = add_verb(commands, "ctx", help="the workspace memory: add texts, search them, show a node",
                   description="Texts added here are stored whole in WORKSPACE/.orgtree, cut into "
                               "pieces and indexed by keyword and meaning (see docs/memory.md).",
                   examples=["pipe ctx add notes/*.md --tag notes", "pipe ctx search \"export button\" -k 3"])
    actions = add_sub_verbs(ctx)

    add = add_verb(actions, "add", handler=command_add, help="store and index text files",
                   description="Store each FILE (UTF-8 text) and index its pieces.",
                   examples=["pipe ctx add notes/design.md notes/todo.md --tag notes",
                             "pipe ctx add big.log --keyword-only"])
    add_workspace_option(add, help=_WORKSPACE_HELP)
    add.add_argument("files", nargs="+", metavar="FILE", help="a text file")
    add.add_argument("--tag", dest="tags", action="append", default=[], metavar="TAG",
                     help="a label to filter searches by (repeatable)")
    add.add_argument("--keyword-only", action="store_true",
                     help="index for keyword search only (skips the embedding model; faster)")
    _add_reader_options(add, "also build the context tree for this model now: its summaries are written (by "
                             "it, unless --extractive) and cached, so later views of the text cost nothing")

    fit = add_verb(actions, "fit", handler=command_fit, help="print a view of documents that fits a model's share",
                   description="Print the documents whole if they fit SHARE of the model's context window, else "
                               "the summaries the context recursion makes of them (written by the model, cached; "
                               "`pipe ctx show ID` opens a `[#ID summary L2]` label).",
                   examples=["pipe ctx fit 1 --model openai/gpt-4o --share 0.25",
                             "pipe ctx fit 1 2 --model scripted:summaries.yaml --window 8000 --json",
                             "pipe ctx fit 1 --model gpt-4o --extractive"])
    add_workspace_option(fit, help=_WORKSPACE_HELP)
    fit.add_argument("documents", nargs="+", type=int, metavar="ID", help="a document id (as printed by add)")
    _add_reader_options(fit, "the model that reads the view (its window and tokenizer) and writes the summaries "
                             "(default: PIPE_MODEL, or [model] name in orgtree.toml)")
    fit.add_argument("--json", action="store_true", help="print JSON: the text, its nodes, levels and tokens")

    search = add_verb(actions, "search", handler=command_search,
                      help="find pieces and summaries by keyword and meaning",
                      description="Print the best matches for QUERY, best first.",
                      examples=["pipe ctx search \"why is the export slow\"",
                                "pipe ctx search retries --mode keyword --level 0 --json"])
    add_workspace_option(search, help=_WORKSPACE_HELP)
    search.add_argument("query", metavar="QUERY", help="what to look for, in words")
    search.add_argument("-k", type=int, default=5, metavar="N", help="how many results (default 5)")
    search.add_argument("--level", type=int, action="append", metavar="L",
                        help="only nodes of this level (0: original pieces; repeatable)")
    search.add_argument("--document", type=int, action="append", metavar="ID",
                        help="only nodes from this document (repeatable)")
    search.add_argument("--tag", dest="tags", action="append", metavar="TAG", help="only documents with this tag")
    search.add_argument("--mode", choices=("hybrid", "keyword", "vector"), default="hybrid",
                        help="hybrid (default): both rankings fused; keyword: BM25 only; vector: embeddings only")
    search.add_argument("--json", action="store_true", help="print JSON")

    show = add_verb(actions, "show", handler=command_show, help="show a node: its text, spans and children",
                    description="Print node NODE's text, the original bytes it stands for, and its children.",
                    examples=["pipe ctx show 12", "pipe ctx show 12 --json"])
    add_workspace_option(show, help=_WORKSPACE_HELP)
    show.add_argument("node", type=int, metavar="NODE", help="a node id (as printed by add and search)")
    show.add_argument("--json", action="store_true", help="print JSON")


class ProgressBar:
    """A one-line bar on stderr, redrawn at most ten times a second."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and done < total:
            return
        self.last = now
        filled = BAR_WIDTH * done // max(total, 1)
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _memory(args, index: bool = True, vectors: bool = True):
    from orgtree_lang.memory.memory import Memory

    return Memory(Path(args.workspace), index=index, vectors=vectors)


def _add_reader_options(parser, model_help: str) -> None:
    parser.add_argument("--model", metavar="SPEC", help=model_help)
    parser.add_argument("--share", type=float, default=0.25, metavar="S",
                        help="the fraction of the model's context window the view may use (default 0.25)")
    parser.add_argument("--window", type=int, metavar="TOKENS",
                        help="the model's context window, for a model litellm's map does not know")
    parser.add_argument("--extractive", action="store_true",
                        help="keep the most central sentences instead of asking the model for summaries "
                             "(as [memory] summarizer = \"extractive\")")
    parser.add_argument("--api-base", metavar="URL", help="the endpoint of an OpenAI-compatible server for the model")
    parser.add_argument("--model-timeout", metavar="SECONDS", type=float,
                        help="how long one model call may take (default: PIPE_MODEL_TIMEOUT, [model] timeout, or 120)")


def _reader(args, required: bool):
    """(reading model name, summarizer) from --model and friends; (None, None) when no model was asked for."""
    from orgtree_lang.memory.settings import MemorySettings
    from orgtree_lang.runtime.errors import UsageError

    root = Path(args.workspace)
    models = models_from_args(args, root / "orgtree.toml", review=False)
    if not models.configured:
        if required:
            raise UsageError("needs the model that reads the view: pass --model SPEC",
                             hint="e.g. --model openai/gpt-4o, or --model scripted:FILE --window 8000")
        return None, None
    settings = MemorySettings.for_workspace(root)
    if args.extractive:
        from dataclasses import replace

        settings = replace(settings, summarizer="extractive")
    summarizer = settings.summarizer_for(models)
    return models.author_spec, summarizer


def _built(memory, documents, args, name: str, summarizer):
    """The view of `documents` for model `name`, with a line on stderr per level of summaries written."""
    def progress(level: int, written: int) -> None:
        print(f"context tree: level {level} done, {written} summaries written", file=sys.stderr, flush=True)

    return memory.fit(documents, name, args.share, context_window=args.window, summarizer=summarizer,
                      progress=progress)


def command_add(args) -> int:
    large = sum(Path(f).stat().st_size for f in args.files if Path(f).is_file()) >= LARGE_INPUT
    reader, summarizer = _reader(args, required=False)
    with _memory(args, vectors=not args.keyword_only) as memory:
        # One transaction for all the files (Memory.add_all): a folder of files is one durable commit.
        label = args.files[0] if len(args.files) == 1 else f"{len(args.files)} files"
        docs = memory.add_files(args.files, tags=args.tags, progress=ProgressBar(f"indexing {label}") if large else None)
        for name, doc in zip(args.files, docs):
            pieces = len(memory.store.children(doc.id))
            print(f"#{doc.id}  {name}  {doc.end - doc.start} bytes  {pieces} pieces")
            if reader is not None:
                view = _built(memory, [doc], args, reader, summarizer)
                print(f"    tree for {reader}: {view.levels} level(s) of summaries, {view.summarized} written, "
                      f"view {view.tokens} of {view.budget} tokens")
    return EXIT_OK


def command_fit(args) -> int:
    reader, summarizer = _reader(args, required=True)
    # A view is no search: as the ctx.fit skill, the summaries it writes are indexed for keyword search at once and
    # embedded by the next search by meaning, so fitting never waits for the embedding model to load.
    with _memory(args, vectors=False) as memory:
        view = _built(memory, args.documents, args, reader, summarizer)
        if args.json:
            print(json.dumps({"text": view.text, "nodes": [n.id for n in view.nodes], "levels": view.levels,
                              "tokens": view.tokens, "budget": view.budget, "summarized": view.summarized,
                              "summarizer": getattr(summarizer, "id", "")}, indent=2))
        else:
            print(view.text)
    return EXIT_OK


def command_search(args) -> int:
    with _memory(args) as memory:
        hits = memory.search(args.query, args.k, documents=args.document, levels=args.level, tags=args.tags,
                             mode=args.mode)
        if args.json:
            print(json.dumps([{"node": h.node.id, "kind": h.node.kind, "level": h.node.level, "score": h.score,
                               "spans": [s.__dict__ for s in h.spans], "text": h.text} for h in hits], indent=2))
            return EXIT_OK
        if not hits:
            print(f"no matches for {args.query!r}", file=sys.stderr)
        for h in hits:
            where = "; ".join(str(s) for s in h.spans[:3]) + (" …" if len(h.spans) > 3 else "")
            first = next((line.strip() for line in h.text.splitlines() if line.strip()), "")
            print(f"#{h.node.id}  {h.node.kind} L{h.node.level}  {h.score:.4f}  {where}\n    {first[:100]}")
    return EXIT_OK


def command_show(args) -> int:
    with _memory(args, index=False) as memory:
        node = memory.get(args.node)
        children = memory.store.children(node.id)
        spans = memory.spans(node)
        if args.json:
            print(json.dumps({"node": node.id, "kind": node.kind, "level": node.level, "tokens": node.tokens,
                              "spans": [s.__dict__ for s in spans], "children": [c.id for c in children],
                              "text": memory.text(node)}, indent=2))
            return EXIT_OK
        print(f"#{node.id}  {node.kind}  level {node.level}  {node.tokens} tokens")
        print("stands for: " + "; ".join(str(s) for s in spans))
        if children:
            print("children: " + " ".join(f"#{c.id}" for c in children))
        print()
        print(memory.text(node))
    return EXIT_OK
