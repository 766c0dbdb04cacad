"""A checkpoint encodes a big list or dict that is the same object as at the last checkpoint once, not again (values
are immutable), so a journaled loop over a long list is linear; a new value, even an equal-sized one, is encoded
afresh, and a run stopped and resumed across such checkpoints ends with the result a plain run gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_file
from orgtree_lang.runtime.blobs import BlobStore, Spiller
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import MEMO_MIN_ITEMS, EncodingMemo, encode
from orgtree_lang.vm.budget import Budget


def test_the_same_big_list_is_encoded_once_and_an_equal_new_one_afresh() -> None:
    memo = EncodingMemo()
    items = [str(i) for i in range(MEMO_MIN_ITEMS)]
    with memo:
        first = encode(items)
    with memo:
        assert encode(items) is first
        equal = list(items)
        assert encode(equal) == first and encode(equal) is not first
    assert encode(items) is not first  # outside a memo nothing is kept


def test_a_value_the_state_no_longer_holds_leaves_the_memo_after_one_encoding() -> None:
    memo = EncodingMemo()
    kept, dropped = {str(i): i for i in range(MEMO_MIN_ITEMS)}, list(range(MEMO_MIN_ITEMS))
    with memo:
        first_kept, first_dropped = encode(kept), encode(dropped)
    with memo:
        assert encode(kept) is first_kept
    with memo:
        assert encode(dropped) is not first_dropped and encode(dropped) == first_dropped


def test_small_lists_are_not_kept() -> None:
    memo = EncodingMemo()
    small = list(range(MEMO_MIN_ITEMS - 1))
    with memo:
        first = encode(small)
    with memo:
        assert encode(small) is not first


def test_a_big_container_spilled_again_reuses_its_blob_reference(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    spiller = Spiller(store, threshold=1000)
    state = {"locals": [[f"word {i}" for i in range(MEMO_MIN_ITEMS)]]}
    first = spiller.spill(state, generation=True)
    digest = first["locals"][0]["$blob"]["sha256"]
    store.delete(digest)  # were the reference made again, the blob would be written again
    assert spiller.spill(state, generation=True) == first and not store.path(digest).exists()
    assert spiller.spill({"locals": [list(state["locals"][0])]}, generation=True) == first
    assert store.path(digest).exists()  # an equal new list is spilled afresh


PROGRAM = '''\
pipeline main(n: int) -> int:
    xs = range(n)
    total = 0
    i = 0
    while i < n:
        if i == 30000:
            xs = reversed(xs)
        total = total + xs[i] * (i % 3)
        i = i + 1
    return total
'''


def _expected(n: int) -> int:
    xs, total = list(range(n)), 0
    for i in range(n):
        if i == 30000:
            xs = xs[::-1]
        total += xs[i] * (i % 3)
    return total


def test_a_run_stopped_after_its_big_list_was_replaced_resumes_with_the_new_list(tmp_path: Path) -> None:
    program = tmp_path / "swap.pipe"
    program.write_text(PROGRAM, encoding="utf-8")
    registry = default_registry(plugins=False)
    n = 40_000  # each iteration is 3 or 4 statements: checkpoints at 50,000 steps before and after the swap
    options = RunOptions(inputs={"n": n}, durable=True, registry=registry, workspace=tmp_path, run_id="swap",
                         use_cache=False, budget=Budget(max_steps=140_000), printer=lambda line: None)
    with pytest.raises(PipeRuntimeError) as stopped:
        run_file(program, options)
    assert stopped.value.kind == "budget"
    machine = durable_runs.resume(tmp_path, "swap", registry, RunOptions(budget=Budget(max_steps=10_000_000)))
    assert machine.state.result == _expected(n)
