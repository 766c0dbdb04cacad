"""random.* and ids.new: values in range from the OS source, not pure (so the journal records them), usable from .pipe."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.errors import SkillArgumentError, SkillError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext, SkillRegistry
from orgtree_lang.runtime.values import RecordValue
from orgtree_lang.runtime.workspace import Workspace

NAMES = ("random.number", "random.int", "random.choice", "random.shuffle", "ids.new")


@pytest.fixture(scope="module")
def registry() -> SkillRegistry:
    return default_registry(plugins=False)


@pytest.fixture
def call(registry: SkillRegistry, tmp_path: Path):
    ctx = SkillContext(workspace=Workspace(tmp_path))

    def invoke(name: str, *args: Any, **kwargs: Any) -> Any:
        return registry.get(name).invoke(list(args), kwargs, ctx)

    return invoke


def test_they_are_stdlib_skills_that_are_neither_pure_nor_idempotent(registry: SkillRegistry) -> None:
    for name in NAMES:
        skill = registry.get(name)
        assert skill is not None and skill.origin == "stdlib", name
        assert not skill.pure and not skill.idempotent, name


def test_signatures(registry: SkillRegistry) -> None:
    assert [registry.get(n).signature() for n in NAMES] == [
        "random.number() -> float",
        "random.int(low: int, high: int) -> int",
        "random.choice(items: list[any]) -> any",
        "random.shuffle(items: list[any]) -> list[any]",
        "ids.new() -> str",
    ]


def test_random_number_is_a_float_from_zero_up_to_one(call) -> None:
    draws = [call("random.number") for _ in range(500)]
    assert all(type(x) is float and 0.0 <= x < 1.0 for x in draws)
    assert len(set(draws)) > 490


def test_random_int_includes_both_bounds(call) -> None:
    draws = [call("random.int", 1, 3) for _ in range(300)]
    assert set(draws) == {1, 2, 3}
    assert call("random.int", -5, -5) == -5
    assert 0 <= call("random.int", 0, 10**30) <= 10**30


def test_random_int_refuses_reversed_bounds_and_non_ints(call) -> None:
    with pytest.raises(SkillError) as info:
        call("random.int", 6, 1)
    assert info.value.message == "random.int: low (6) is greater than high (1)"
    assert info.value.hint == "both bounds are included; did you mean random.int(1, 6)?"
    with pytest.raises(SkillArgumentError):
        call("random.int", 1.5, 3)
    with pytest.raises(SkillArgumentError):
        call("random.int", True, 3)


def test_random_choice_picks_every_item_and_keeps_records(call) -> None:
    record = RecordValue("Point", {"x": 1})
    items = ["a", 2, record]
    picks = [call("random.choice", items) for _ in range(200)]
    assert set(map(repr, picks)) == set(map(repr, items))
    assert call("random.choice", [record]) == record


def test_random_choice_of_an_empty_list_is_an_error(call) -> None:
    with pytest.raises(SkillError) as info:
        call("random.choice", [])
    assert info.value.message == "random.choice: cannot pick from an empty list"


def test_random_shuffle_returns_a_new_permutation_and_leaves_the_input(call) -> None:
    items = [1, 2, 3, 4, 5]
    orders = set()
    for _ in range(100):
        shuffled = call("random.shuffle", items)
        assert sorted(shuffled) == [1, 2, 3, 4, 5] and shuffled is not items
        orders.add(tuple(shuffled))
    assert items == [1, 2, 3, 4, 5]
    assert len(orders) > 10
    assert call("random.shuffle", []) == []


def test_ids_new_is_a_fresh_uuid4_in_hex(call) -> None:
    ids = [call("ids.new") for _ in range(1000)]
    assert all(re.fullmatch(r"[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}", i) for i in ids)
    assert len(set(ids)) == 1000


def test_seeding_pythons_global_generator_does_not_repeat_them(call) -> None:
    # Replays get identical values from the journal; a seed must not be what makes them repeat.
    random.seed(0)
    first = (call("random.number"), call("random.shuffle", list(range(20))))
    random.seed(0)
    assert (call("random.number"), call("random.shuffle", list(range(20)))) != first


def test_a_program_uses_them(registry: SkillRegistry, tmp_path: Path) -> None:
    source = (
        "use random, ids\n\n"
        "pipeline main() -> list[any]:\n"
        "    die = random.int(1, 6)\n"
        "    pick = random.choice([\"a\", \"b\"])\n"
        "    deck = random.shuffle([1, 2, 3])\n"
        "    return [random.number(), die, pick, deck, ids.new()]\n"
    )
    program = compile_source(source, "dice.pipe", registry).program
    machine = run_program(program, tmp_path, registry, RunOptions(trace_level="calls"))
    x, die, pick, deck, new_id = machine.state.result
    assert 0 <= x < 1 and 1 <= die <= 6 and pick in ("a", "b") and sorted(deck) == [1, 2, 3]
    assert len(new_id) == 32
