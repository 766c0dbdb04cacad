"""The research agent on held-out questions whose answers are only on pages of a local test web (some a link away from
what the search finds, one in a data file) or only obtainable by running code; reports how many are answered
correctly with a citation of where the answer is (the page's URL, or an experiment run in code.run).

    python benchmarks/research_eval.py --model gpt-4o-mini --api-base http://127.0.0.1:8000/v1   # a real model
    python benchmarks/research_eval.py --model openai/finder --review-model openai/checker --api-base URL
    python benchmarks/research_eval.py --offline     # no model: the research agent's word-overlap fallbacks

Each finding is proposed as an insight (stdlib/research.pipe's `ask`) and reviewed by `--review-model` (default the
research model), so the findings and their review can come from independent models; behind
shared/tools/model_bridge.py each model name gets its own folder of requests (DIR/finder/, DIR/checker/).

The web is an HTTP server on 127.0.0.1 (a SearXNG-style JSON search over its pages, and the pages), the only origin
[http] allow names; experiments run in the sandbox. Offline, the fallbacks follow links by the words of their address
and write no experiment, so the code questions are expected to fail: that figure is the baseline a model must beat.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@dataclass(frozen=True)
class Case:
    question: str
    answer: str  # a regex the finding's answer must match
    source: str  # a regex its source must match ("{web}" is the test web's address)
    kind: str  # web | code


def primes_below(n: int) -> int:
    sieve = bytearray([1]) * n
    sieve[:2] = b"\0\0"
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(range(i * i, n, i)))
    return sum(sieve)


def fibonacci(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


# Made-up products, so no model knows the answers: they are on the pages only.
PAGES = {
    "/docs/zephyrine": ("Zephyrine gateway", "The Zephyrine gateway routes telemetry between depots. "
                        "<a href='/docs/zephyrine/network-port'>Network settings</a> "
                        "<a href='/docs/zephyrine/history'>History</a>"),
    "/docs/zephyrine/network-port": ("Network settings", "Unless configured otherwise the Zephyrine gateway listens "
                                     "on port 7319 for incoming telemetry."),
    "/docs/zephyrine/history": ("History", "The Zephyrine project began as a student experiment in a harbour office."),
    "/docs/qorvath": ("Qorvath archive", "The Qorvath archive keeps the ledgers of the valley co-operatives. It opened "
                      "to the public in 1987 after the flood repairs."),
    "/docs/plinth": ("Plinth API", "The Plinth API is described in its limits table: "
                     "<a href='/data/plinth-limits.csv'>limits (CSV)</a>"),
    "/data/plinth-limits.csv": ("", "endpoint,requests_per_minute\n/search,240\n/upload,15\n/export,4\n"),
    "/docs/moravel": ("Moravel dyes", "Moravel dyes come in three families. The indigo family is fixed with alum at "
                      "a bath temperature of 64 degrees Celsius."),
}
CASES = (
    Case("On which port does the Zephyrine gateway listen by default?", r"\b7319\b", r"{web}/docs/zephyrine/network-port$",
         "web"),
    Case("In which year did the Qorvath archive open to the public?", r"\b1987\b", r"{web}/docs/qorvath$", "web"),
    Case("How many requests per minute does the Plinth API allow on its /upload endpoint?", r"\b15\b",
         r"{web}/data/plinth-limits\.csv$", "web"),
    Case("At what bath temperature is the indigo family of Moravel dyes fixed?", r"\b64\b", r"{web}/docs/moravel$",
         "web"),
    Case("How many prime numbers are there below 250000?", rf"\b{primes_below(250_000):,}\b|\b{primes_below(250_000)}\b",
         r"^experiment ", "code"),
    Case("What is the 90th Fibonacci number, with F(1) = F(2) = 1?", rf"\b{fibonacci(90)}\b", r"^experiment ", "code"),
    Case("What are the first 12 hex digits of the SHA-256 digest of the ASCII string 'orgtree-research'?",
         hashlib.sha256(b"orgtree-research").hexdigest()[:12], r"^experiment ", "code"),
)


def page_html(title: str, body: str) -> str:
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>"


class TestWeb(BaseHTTPRequestHandler):
    """The pages, and /search ranking them by the query's words in their title and first sentence."""

    def do_GET(self):  # noqa: N802 (the http.server interface)
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        url = urlsplit(self.path)
        if url.path == "/search":
            words = set(re.findall(r"[a-z0-9]{4,}", parse_qs(url.query).get("q", [""])[0].lower()))
            scored = []
            for path, (title, body) in PAGES.items():
                if path.startswith("/docs/") and path.count("/") == 2:  # the search indexes the product pages only
                    score = len(words & set(re.findall(r"[a-z0-9]{4,}", f"{title} {body}".lower())))
                    if score:
                        scored.append((-score, path, title, re.sub(r"<[^>]+>", "", body).split(". ")[0]))
            results = [{"title": t, "url": base + p, "content": c} for _, p, t, c in sorted(scored)[:5]]
            return self._send(json.dumps({"results": results}), "application/json")
        if url.path not in PAGES:
            return self.send_error(404)
        title, body = PAGES[url.path]
        if url.path.endswith(".csv"):
            return self._send(body, "text/csv")
        return self._send(page_html(title, body), "text/html")

    def _send(self, text: str, kind: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def research(workspace: Path, questions: list[str], models) -> dict:
    """stdlib/research.pipe's `ask` on the questions, in `workspace`: {question: (answer, source, insight status)}
    (the status is the insight reviewer's decision on the finding) and the notes."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.run.factory import plain_machine
    from orgtree_lang.run.registries import default_registry
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.runtime.workspace import Workspace

    registry = default_registry(plugins=False)
    source = resources.files("orgtree_lang.stdlib").joinpath("research.pipe").read_text(encoding="utf-8")
    program = compile_source(source, "research.pipe", registry).program
    machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(workspace), models=models))
    machine.start("ask", {"questions": questions, "web": True})
    result = machine.run().result
    found = {f["question"]: (f["answer"], f["source"], f["insight"]) for f in result["findings"]}
    return {"found": found, "notes": list(result["notes"])}


def evaluate(models, cases=CASES, show=False) -> list[tuple[Case, bool, bool, str]]:
    """(case, answered correctly, with the right citation, the insight review's status) for each case, against a fresh
    workspace and test web."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), TestWeb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    web = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "orgtree.toml").write_text(f'[web]\nsearch = "searxng"\nurl = "{web}"\n\n[http]\nallow = ["{web}"]\n')
            done = research(root, [c.question for c in cases], models)
    finally:
        server.shutdown()
        server.server_close()
    scored = []
    for case in cases:
        answer, source, insight = done["found"].get(case.question, ("", "", "no finding"))
        right = bool(re.search(case.answer, answer))
        cited = right and bool(re.search(case.source.replace("{web}", re.escape(web)), source))
        scored.append((case, right, cited, insight))
        if show:
            print(f"  [{'ok' if cited else 'right, uncited' if right else 'no'}] {case.question}\n"
                  f"      answer: {answer[:120]!r}\n      source: {source[:120]!r}\n      insight review: {insight}")
    if show:
        for note in done["notes"]:
            print(f"  note: {note[:160]}")
    return scored


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="the research agent's model (litellm name), e.g. gpt-4o-mini")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint for --model (and --review-model)")
    parser.add_argument("--review-model", help="the insight reviewer's model, independent of --model (default --model)")
    parser.add_argument("--window", type=int, help="--model's context window, when litellm's map does not know it")
    parser.add_argument("--review-window", type=int, help="--review-model's context window (default --window when "
                                                          "the models are the same)")
    parser.add_argument("--offline", action="store_true", help="no model: the agent's word-overlap fallbacks")
    parser.add_argument("--only", choices=("web", "code"), help="only the questions of one kind")
    parser.add_argument("--show", action="store_true", help="print each question's answer and source")
    args = parser.parse_args(argv)
    if not args.offline and not args.model:
        parser.error("give --model (with --api-base for a local endpoint), or --offline for the fallbacks")
    from orgtree_lang.models.roles import RunModels

    if args.offline and args.review_model:
        parser.error("--review-model needs --model: offline there is no reviewer")
    review_window = args.review_window or (args.window if args.review_model in (None, args.model) else None)
    models = None if args.offline else RunModels(args.model, args.review_model,
                                                 extra={"api_base": args.api_base} if args.api_base else {},
                                                 windows={"author": args.window, "reviewer": review_window})
    cases = tuple(c for c in CASES if args.only in (None, c.kind))
    scored = evaluate(models, cases, show=args.show)
    reviewer = "" if args.offline else f"; insight review by {args.review_model or args.model}"
    print(f"research agent: {'offline fallbacks (no model)' if args.offline else args.model}{reviewer}")
    for kind in ("web", "code"):
        of_kind = [s for s in scored if s[0].kind == kind]
        if of_kind:
            print(f"  {kind:<5} {sum(c for _, _, c, _ in of_kind)}/{len(of_kind)} answered correctly with citations "
                  f"({sum(r for _, r, _, _ in of_kind)} correct)")
    total = sum(c for _, _, c, _ in scored)
    accepted = sum(insight == "accepted" for _, _, _, insight in scored)
    kept = sum(cited and insight == "accepted" for _, _, cited, insight in scored)
    print(f"  insight review: {accepted}/{len(scored)} findings accepted into the pool "
          f"({kept} of them correct with citations)")
    print(f"RESULT answered correctly with citations: {total}/{len(scored)} = {total / len(scored):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
