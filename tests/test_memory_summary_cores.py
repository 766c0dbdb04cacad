"""Extractive summaries written on several cores: worker processes and this one write the same summaries, in the
same order, as this process alone, and a worker that cannot start, dies or hangs loses nothing."""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import pytest

from orgtree_lang.memory import summarize
from orgtree_lang.memory.summarize import LOWERS_TO_ASCII, ExtractiveSummarizer, extract, extract_on_cores
from orgtree_lang.memory.tokenizer import Tokenizer


def texts() -> list[str]:
    """Real text nobody here wrote: some of the standard library's sources, each a different length."""
    root = Path(sysconfig.get_paths()["stdlib"])
    names = ("textwrap.py", "difflib.py", "json/encoder.py", "argparse.py", "shlex.py", "csv.py", "heapq.py",
             "bisect.py", "fnmatch.py", "glob.py", "abc.py", "colorsys.py")
    found = [(root / name).read_text(encoding="utf-8") for name in names if (root / name).exists()]
    assert len(found) >= 6, f"too few stdlib sources under {root}"
    return found + ["The Kelvin sign \u212aelvin and \u0130stanbul lower to ASCII letters. Ties tie.\n" * 30]


def alone(items: list[str], target: int) -> list[str]:
    return [extract(text, target) for text in items]


@pytest.mark.parametrize("help_out", [False, True])
def test_workers_write_the_summaries_this_process_writes_in_order(help_out):
    items = texts()
    # help_out=False: every summary comes from the worker processes.
    assert extract_on_cores(items, 300, 2, help_out=help_out) == alone(items, 300)


def test_a_big_round_goes_to_the_workers_and_a_small_one_does_not(monkeypatch):
    items = texts()
    started = []
    real = summarize._ExtractWorker.__init__

    def counted(self):
        started.append(self)
        real(self)

    monkeypatch.setattr(summarize._ExtractWorker, "__init__", counted)
    tokenizer = Tokenizer("gpt-4o")
    assert ExtractiveSummarizer(1).summarize_many(items, 200, tokenizer) == alone(items, 200)
    assert started == []  # far below PARALLEL_CHARS
    monkeypatch.setattr(summarize, "PARALLEL_CHARS", 1000)
    assert ExtractiveSummarizer(1).summarize_many(items, 200, tokenizer) == alone(items, 200)
    assert len(started) == 1
    assert ExtractiveSummarizer(0).summarize_many(items, 200, tokenizer) == alone(items, 200)
    assert len(started) == 1  # no spare core: no worker


@pytest.mark.parametrize("code", [
    "import sys; sys.exit(3)",                                   # dies at once
    "import sys; sys.stdin.buffer.read(10); sys.exit(3)",        # dies in the middle of a request
    "import sys; sys.stdout.buffer.write(b'not a pickle'); sys.stdout.flush(); sys.stdin.buffer.read()",
], ids=["exits", "dies-reading", "answers-garbage"])
def test_a_worker_that_fails_loses_no_summary(monkeypatch, code):
    monkeypatch.setattr(summarize, "WORKER_CODE", code)
    items = texts()
    assert extract_on_cores(items, 300, 2, help_out=False) == alone(items, 300)


def test_a_worker_that_cannot_start_loses_no_summary(monkeypatch):
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    items = texts()
    assert extract_on_cores(items, 300, 1) == alone(items, 300)


def test_a_hanging_worker_is_stopped_and_its_run_written_here(monkeypatch):
    monkeypatch.setattr(summarize, "WORKER_CODE", "import time; time.sleep(120)")
    monkeypatch.setattr(summarize, "WORKER_PATIENCE", 0.5)
    items = texts()
    workers = []
    real = summarize._ExtractWorker.__init__

    def kept(self):
        real(self)
        workers.append(self)

    monkeypatch.setattr(summarize._ExtractWorker, "__init__", kept)
    assert extract_on_cores(items, 300, 1) == alone(items, 300)
    assert workers and all(w.process.poll() is not None for w in workers)  # stopped, not left behind


def test_only_the_listed_characters_lower_into_word_characters():
    """extract lowers a whole text at once unless it has one of LOWERS_TO_ASCII: lowering any other character
    must never make a word character or a line break, or words would be found that the text does not have."""
    word = re.compile(r"[A-Za-z0-9_\n]")
    found = {chr(c) for c in range(0x80, 0x110000)
             if not 0xD800 <= c <= 0xDFFF and word.search(chr(c).lower())}
    assert found == set(LOWERS_TO_ASCII)
