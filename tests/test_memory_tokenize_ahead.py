"""Tokenizer.ids_ahead: the documents' token ids made in batches on threads, in order, errors in place."""

from __future__ import annotations

import threading

import pytest

from orgtree_lang.memory.tokenizer import Tokenizer

pytestmark = pytest.mark.fast

TEXTS = [f"line {i} of a notice.\n" * (i + 1) + "caf\u00e9 <|endoftext|> \u4e2d\u6587" for i in range(30)]


def test_ids_ahead_are_the_ids_encode_ordinary_makes_in_order():
    tokenizer = Tokenizer("gpt-4o")
    got = [ids.tolist() for ids in tokenizer.ids_ahead(TEXTS)]
    assert got == [tokenizer.encoding.encode_ordinary(text) for text in TEXTS]  # a special token's text is text


def test_an_error_comes_where_its_text_would_and_the_thread_ends():
    tokenizer = Tokenizer("gpt-4o")
    texts = TEXTS[:5] + [None] + TEXTS[5:]  # not a str: tiktoken refuses it
    seen = []
    with pytest.raises(TypeError):
        for ids in tokenizer.ids_ahead(texts):
            seen.append(ids)
    assert len(seen) == 5
    for thread in threading.enumerate():
        if thread.name.startswith("pipe-tokenize"):
            thread.join(5)
    assert not [t for t in threading.enumerate() if t.name.startswith("pipe-tokenize") and t.is_alive()]


def test_stopping_early_ends_the_thread():
    tokenizer = Tokenizer("gpt-4o")
    many = TEXTS * 10
    ahead = tokenizer.ids_ahead(many)
    assert next(ahead).tolist() == tokenizer.encoding.encode_ordinary(many[0])
    ahead.close()
    for thread in threading.enumerate():
        if thread.name.startswith("pipe-tokenize"):
            thread.join(5)
    assert not [t for t in threading.enumerate() if t.name.startswith("pipe-tokenize") and t.is_alive()]
