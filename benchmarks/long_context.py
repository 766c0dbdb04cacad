"""Long documents answered three ways: plain long context (the whole document, cut to the reader's window, asked
directly) against the context tree with extractive or model-written summaries (the document's view from ctx.fit plus
the pieces a keyword search finds). Generated documents (100 KB to 20 MB) carry facts at known depths; questions are
of three kinds (find one fact, count across the document, compare two distant parts). Reports accuracy per flow,
tokens per answer, build time and the summarizer's calls, so it shows where plain context collapses.

    python benchmarks/long_context.py --model gpt-4o-mini --api-base http://127.0.0.1:8000/v1   # a real model
    python benchmarks/long_context.py --model openai/qwen --api-base URL --window 32000 --sizes 100k,1m,20m
    python benchmarks/long_context.py --model M --flows plain,extractive        # no summarizer calls
    python benchmarks/long_context.py --offline --sizes 20k            # scripted reader: the pipeline, not a model

The plain flow shows the reader the document's first PLAIN_SHARE of its window (the rest is the question, the answer
and slack for a tokenizer that counts differently from ours), so a fact past that depth is out of its sight. Offline,
a scripted reader (pattern matching over what it was shown) stands in for the model, and a scripted summarizer keeps
the lines with numbers: the figures then say whether each flow puts the facts in front of the reader, not how well a
model reads. The anchor to beat (recursive language models) keeps its accuracy to 10M+ tokens where plain long
context collapses.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

VIEW_SHARE = 0.10    # of the reader's window: the document's view (summaries at the levels that fit)
SEARCH_SHARE = 0.15  # the pieces the keyword search finds for the question
SEARCH_HITS = 12
PLAIN_SHARE = 0.90   # of the reader's window: the head of the document, for the plain long-context flow
FLOWS = ("plain", "extractive", "model")
FILLER = ("The committee reviewed the quarterly logistics report and noted minor delays in the northern depots.",
          "Staff rotated through the training programme while the archive was moved to the new building.",
          "Weather on the coast stayed mild, and the ferry schedule ran without interruption for the season.",
          "A survey of the reading rooms found that most visitors came in the late afternoon.",
          "Maintenance crews replaced the lighting in the east corridor and repainted the loading bay.",
          "The newsletter described the garden restoration and thanked the volunteers by team.",
          "Several suppliers changed their invoicing format, which the accounts office absorbed quietly.",
          "Minutes of the meeting were circulated and approved without amendment the following week.")
NAMES = ("Amber", "Basalt", "Cobalt", "Dune", "Ember", "Fjord", "Garnet", "Heron", "Indigo", "Juniper", "Kestrel",
         "Larch", "Mistral", "Nimbus", "Onyx", "Pewter", "Quartz", "Russet", "Sable", "Tundra")
ANSWER_SYSTEM = ("You answer a question about a long document from the parts of it you are shown: a summary view and "
                 "the passages a search found. Answer with the answer only: a code, a number, or one word.")
PLAIN_SYSTEM = ("You answer a question about a long document from its text, which may stop where your window ends. "
                "Answer with the answer only: a code, a number, or one word.")


@dataclass
class Question:
    kind: str  # find | count | compare
    text: str
    answer: str
    depths: list[float] = field(default_factory=list)


def make_document(size: int, per_kind: int, seed: int = 7) -> tuple[str, list[Question]]:
    """A document of about `size` bytes of filler in sections, with `per_kind` questions of each kind planted."""
    rng = random.Random(seed)
    names = list(NAMES)
    rng.shuffle(names)
    facts: list[tuple[float, str]] = []
    questions: list[Question] = []
    for i in range(per_kind):
        vault, depth, code = names[i], (i + 0.5) / per_kind, str(rng.randint(1000, 9999))
        facts.append((depth, f"Vault {vault} opens with the code {code}."))
        questions.append(Question("find", f"What code opens vault {vault}?", code, [depth]))
    for i in range(per_kind):
        warehouse, count = names[per_kind + i], rng.randint(3, 9)
        depths = sorted(rng.random() for _ in range(count))
        facts += [(d, f"Shipment log: warehouse {warehouse} received one pallet of spare parts.") for d in depths]
        questions.append(Question("count", f"How many pallets did warehouse {warehouse} receive in all?", str(count),
                                  depths))
    for i in range(per_kind):
        project = names[2 * per_kind + i]
        first, last = rng.sample(range(100, 999), 2)
        early, late = 0.02 + 0.01 * i, 0.97 - 0.01 * i
        facts.append((early, f"The opening report sets the {project} budget at {first} credits."))
        facts.append((late, f"The closing report sets the {project} budget at {last} credits."))
        questions.append(Question("compare", f"Was the {project} budget larger in the opening report or the closing "
                                             "report?", "opening" if first > last else "closing", [early, late]))
    facts.sort()
    parts, length, section, fact = [], 0, 0, 0
    while length < size or fact < len(facts):
        due = fact < len(facts) and length >= size * facts[fact][0]
        if due:
            parts.append(facts[fact][1] + "\n")
            fact += 1
        elif len(parts) % 40 == 0:
            section += 1
            parts.append(f"\n## Section {section}\n\n")
        else:
            parts.append(" ".join(rng.choice(FILLER) for _ in range(3)) + "\n")
        length += len(parts[-1])
    return "".join(parts), questions


class OfflineModel:
    """The scripted stand-in for a model: summaries keep the lines with digits; answers are read off what it was shown
    by the facts' patterns. Deterministic, labelled offline in the output."""

    scripted = True

    def __init__(self, window: int) -> None:
        self.name = f"offline:{window}"

    def complete(self, messages, *, schema=None, conversation_id=None):
        from orgtree_lang.models.base import Completion, Usage

        system, prompt = messages[0].content, messages[-1].content
        text = self._summary(prompt) if "context tree" in system else self._answer(prompt)
        return Completion(text, Usage(len(prompt) // 4, len(text) // 4), self.name, conversation_id, scripted=True)

    @staticmethod
    def _summary(prompt: str) -> str:
        body = prompt.split("\n\n", 1)[-1]
        kept = [line.strip() for line in re.split(r"(?<=[.!?])\s+|\n", body) if re.search(r"\d", line)]
        return "Covers: part of the document\n" + "\n".join(kept)

    @staticmethod
    def _answer(prompt: str) -> str:
        question = prompt.rsplit("Question:", 1)[-1]
        shown = prompt.rsplit("Question:", 1)[0]
        if match := re.search(r"vault (\w+)", question):
            found = re.search(rf"Vault {match.group(1)} opens with the code (\d+)", shown)
            return found.group(1) if found else "unknown"
        if match := re.search(r"warehouse (\w+)", question):
            # Each passage is distinct bytes of the document; the view may repeat some of them.
            view, _, passages = shown.partition("Passages a search found:")
            needle = f"warehouse {match.group(1)} received"
            return str(max(view.count(needle), passages.count(needle)))
        if match := re.search(r"the (\w+) budget", question):
            first = re.search(rf"opening report sets the {match.group(1)} budget at (\d+)", shown)
            last = re.search(rf"closing report sets the {match.group(1)} budget at (\d+)", shown)
            if first and last:
                return "opening" if int(first.group(1)) > int(last.group(1)) else "closing"
        return "unknown"


class CountedModel:
    """A model whose calls and tokens are counted (the summarizer's, while a tree is built)."""

    def __init__(self, model) -> None:
        self.model, self.name, self.calls, self.tokens = model, model.name, 0, 0
        self.scripted = getattr(model, "scripted", False)

    def __getattr__(self, name: str):
        return getattr(self.model, name)

    def complete(self, messages, **kwargs):
        done = self.model.complete(messages, **kwargs)
        self.calls += 1
        self.tokens += done.usage.prompt_tokens + done.usage.completion_tokens
        return done


def plain_view(text: str, tokenizer) -> str:
    """The document's head that fits PLAIN_SHARE of the window (the prefix of a huge text is tokenized, not all of it:
    no token is longer than 16 characters in the texts made here)."""
    room = int(tokenizer.window * PLAIN_SHARE)
    return tokenizer.tokenizer.head(text[: room * 16], room)


def plain_answer(shown: str, question: Question, reader, tokenizer) -> tuple[str, int]:
    """The reader's answer from the document's head alone; and the prompt's tokens."""
    from orgtree_lang.models.base import Message

    prompt = f"Document:\n{shown}\n\nQuestion: {question.text}"
    done = reader.complete([Message("system", PLAIN_SYSTEM), Message("user", prompt)])
    return done.text.strip(), tokenizer.count(prompt) + done.usage.completion_tokens


def answer(memory, doc, question: Question, reader, spec: str, summarizer, tokenizer) -> tuple[str, int]:
    """The reader's answer from the document's view and the search's pieces; and the prompt's tokens."""
    from orgtree_lang.models.base import Message

    view = memory.fit([doc], spec, share=VIEW_SHARE, summarizer=summarizer)
    room, found = int(tokenizer.window * SEARCH_SHARE), []
    for hit in memory.search(question.text, k=SEARCH_HITS, mode="keyword"):
        passage = f"[#{hit.node.id}] {hit.text.strip()}"
        if tokenizer.count("\n".join(found + [passage])) > room:
            break
        found.append(passage)
    prompt = (f"Summary view of the document:\n{view.text}\n\nPassages a search found:\n" + "\n".join(found)
              + f"\n\nQuestion: {question.text}")
    done = reader.complete([Message("system", ANSWER_SYSTEM), Message("user", prompt)])
    return done.text.strip(), tokenizer.count(prompt) + done.usage.completion_tokens


def correct(given: str, expected: str) -> bool:
    words = re.findall(r"[a-z0-9]+", given.lower())
    return expected.lower() in words


@dataclass
class Window:
    window: int
    tokenizer: object

    def count(self, text: str) -> int:
        return self.tokenizer.count(text)


def measure(size: int, per_kind: int, flow: str, reader, spec: str, window: int, summary_model) -> dict:
    """Answer every question of one document by one flow (plain: its head; else the tree built with that
    summarizer); the figures."""
    from orgtree_lang.memory.tokenizer import Tokenizer

    text, questions = make_document(size, per_kind)
    counter = Window(window, Tokenizer(spec.rsplit(":", 1)[0]))
    summarizing = CountedModel(summary_model)
    if flow == "plain":
        started = time.perf_counter()
        shown = plain_view(text, counter)
        build = time.perf_counter() - started
        results = [(q, ok, tokens) for q in questions
                   for given, tokens in [plain_answer(shown, q, reader, counter)]
                   for ok in [correct(given, q.answer)]]
    else:
        build, results = _through_tree(text, questions, flow, reader, spec, counter, summarizing)
    by_kind = {k: [ok for q, ok, _ in results if q.kind == k] for k in ("find", "count", "compare")}
    return {"size": len(text.encode()), "flow": flow, "build_s": build, "summary_calls": summarizing.calls,
            "summary_tokens": summarizing.tokens,
            "accuracy": sum(ok for _, ok, _ in results) / len(results),
            "by_kind": {k: sum(v) / len(v) for k, v in by_kind.items() if v},
            "tokens": sum(t for _, _, t in results) / len(results)}


def _through_tree(text: str, questions: list[Question], flow: str, reader, spec: str, counter: Window,
                  summary_model: CountedModel) -> tuple[float, list]:
    """The tree's build time (adding the document and fitting its view) and (question, correct, tokens) of each."""
    from orgtree_lang.memory.memory import Memory
    from orgtree_lang.memory.summarize import ExtractiveSummarizer, ModelSummarizer

    summarizer = ExtractiveSummarizer() if flow == "extractive" else ModelSummarizer(summary_model)
    with tempfile.TemporaryDirectory() as folder, Memory(Path(folder), vectors=False) as memory:
        started = time.perf_counter()
        doc = memory.add(text, name="long.txt")
        memory.fit([doc], spec, share=VIEW_SHARE, summarizer=summarizer)
        build = time.perf_counter() - started
        results = []
        for question in questions:
            given, tokens = answer(memory, doc, question, reader, spec, summarizer, counter)
            results.append((question, correct(given, question.answer), tokens))
    return build, results


def parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)b?", text.strip().lower())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 100k or 20m")
    return int(float(match.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}[match.group(2)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="the reader and summarizer model (litellm name), e.g. gpt-4o-mini")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint for --model")
    parser.add_argument("--window", type=int, help="the model's context window, when litellm's map does not know it")
    parser.add_argument("--offline", action="store_true", help="a scripted reader and summarizer (no model)")
    parser.add_argument("--sizes", default="100k,1m", help="document sizes, comma separated (100k to 20m)")
    parser.add_argument("--per-kind", type=int, default=3, help="questions of each kind per document")
    parser.add_argument("--flows", "--summaries", default=",".join(FLOWS),
                        help="plain (the document's head, asked directly), extractive and model (the context tree "
                             "with those summaries); comma separated, default all three")
    args = parser.parse_args(argv)
    if not args.offline and not args.model:
        parser.error("give --model (with --api-base for a local endpoint), or --offline for the scripted run")
    from orgtree_lang.models.tokens import context_window

    if args.offline:
        window = args.window or 32_000
        reader = OfflineModel(window)
        spec = f"gpt-4o:{window}"
    else:
        from orgtree_lang.models.select import model_from_spec

        reader = model_from_spec(args.model, api_base=args.api_base) if args.api_base else model_from_spec(args.model)
        window = args.window or context_window(args.model)
        spec = f"{args.model}:{window}"
    flows = [f.strip() for f in args.flows.split(",") if f.strip()]
    if unknown := [f for f in flows if f not in FLOWS]:
        parser.error(f"unknown flow {unknown[0]!r}: the flows are {', '.join(FLOWS)}")
    label = "offline (scripted reader and summarizer, not a model's accuracy)" if args.offline else args.model
    print(f"reader: {label}, window {window:,} tokens; plain: the document's first {PLAIN_SHARE:.0%} of it; "
          f"tree: view {VIEW_SHARE:.0%} + search {SEARCH_SHARE:.0%} of it")
    print(f"{'size':>12}  {'flow':<10}  {'build s':>8}  {'summary calls':>13}  {'accuracy':>8}  {'find':>5}  "
          f"{'count':>5}  {'compare':>7}  {'tokens/answer':>13}")
    for size in (parse_size(s) for s in args.sizes.split(",")):
        for flow in flows:
            row = measure(size, args.per_kind, flow, reader, spec, window, reader)
            k = row["by_kind"]
            print(f"{row['size']:>12,}  {flow:<10}  {row['build_s']:>8.1f}  {row['summary_calls']:>13,}  "
                  f"{row['accuracy']:>8.2f}  {k['find']:>5.2f}  {k['count']:>5.2f}  {k['compare']:>7.2f}  "
                  f"{row['tokens']:>13,.0f}", flush=True)
            print(f"RESULT size={row['size']} flow={flow} accuracy={row['accuracy']:.2f} tokens={row['tokens']:.0f} "
                  f"build={row['build_s']:.2f}s summary_calls={row['summary_calls']} "
                  f"summary_tokens={row['summary_tokens']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
