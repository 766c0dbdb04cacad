"""Skills: @skill metadata, docstrings, schemas, argument binding and checking, the registry and plugin discovery."""

from __future__ import annotations

import hashlib
import sys
import textwrap
import types
from pathlib import Path, PurePosixPath
from typing import Any

import pydantic
import pytest

from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.docstrings import parse_docstring
from orgtree_lang.runtime.errors import SkillArgumentError, SkillError
from orgtree_lang.runtime.skills import (
    MISSING,
    Param,
    Skill,
    SkillContext,
    SkillRegistry,
    make_skill,
    skill,
)
from orgtree_lang.runtime.values import RecordValue
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.syntax.types import INT, STR, list_of, optional

pytestmark = pytest.mark.fast


@pytest.fixture
def ctx(tmp_path: Path) -> SkillContext:
    return SkillContext(workspace=Workspace(tmp_path), run_id="test", clock=lambda: 0.0)


@skill("demo.split", pure=True)
def demo_split(text: str, sep: str | None = None, maxsplit: int = -1) -> list[str]:
    """Split text into parts.

    Whitespace runs count as one separator when `sep` is none.

    Args:
        text: The text to split.
        sep: The separator,
            or none for whitespace.
        maxsplit: The most splits to do.

    Returns:
        list[str]: The parts in order.
    """
    return text.split(sep, maxsplit)


# --- docstrings -------------------------------------------------------------------------------


def test_docstring_summary_body_args_and_returns_are_separated() -> None:
    doc = parse_docstring(demo_split.__doc__)
    assert doc.summary == "Split text into parts."
    assert doc.body == "Whitespace runs count as one separator when `sep` is none."
    assert doc.params == {
        "text": "The text to split.",
        "sep": "The separator, or none for whitespace.",
        "maxsplit": "The most splits to do.",
    }
    assert doc.returns == "The parts in order."


def test_docstring_keeps_other_sections_in_the_description() -> None:
    doc = parse_docstring("Do it.\n\nArgs:\n    x (int): The x.\n\nRaises:\n    SkillError: When bad.\n")
    assert doc.params == {"x": "The x."}
    assert doc.description == "Do it.\n\nRaises:\n    SkillError: When bad."


def test_docstring_returns_without_type_prefix_is_kept_whole() -> None:
    doc = parse_docstring("Count.\n\nReturns:\n    The count of things:\n    all of them.")
    assert doc.returns == "The count of things: all of them."


def test_empty_docstring_has_no_parts() -> None:
    assert parse_docstring(None).summary == ""
    assert parse_docstring("   ").params == {}


# --- @skill -----------------------------------------------------------------------------------


def test_skill_decorator_records_metadata_and_returns_the_function() -> None:
    built = demo_split.__pipe_skill__
    assert isinstance(built, Skill)
    assert demo_split("a b") == ["a", "b"]
    assert built.name == "demo.split"
    assert built.namespace == "demo"
    assert built.pure and built.idempotent
    assert built.takes_context is False
    assert built.returns == list_of(STR)
    assert built.returns_doc == "The parts in order."
    assert built.description == "Split text into parts.\n\nWhitespace runs count as one separator when `sep` is none."
    assert built.params == (
        Param("text", STR, MISSING, "The text to split."),
        Param("sep", optional(STR), None, "The separator, or none for whitespace."),
        Param("maxsplit", INT, -1, "The most splits to do."),
    )
    assert built.params[0].required and not built.params[1].required


def test_skill_name_defaults_to_module_last_part_and_function_name() -> None:
    @skill
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    module_last = __name__.rpartition(".")[2]
    assert shout.__pipe_skill__.name == f"{module_last}.shout"
    assert shout.__pipe_skill__.pure is False


def test_skill_does_not_register_anywhere() -> None:
    assert "demo.split" not in default_registry(plugins=False)


def test_skill_refuses_a_parameter_without_type_hint() -> None:
    with pytest.raises(TypeError, match="parameter `b` has no type hint"):
        @skill("demo.bad")
        def bad(a: int, b) -> int:  # type: ignore[no-untyped-def]
            """Bad."""
            return a


def test_skill_refuses_a_missing_return_hint() -> None:
    with pytest.raises(TypeError, match="no return type hint"):
        @skill("demo.bad")
        def bad(a: int):  # type: ignore[no-untyped-def]
            """Bad."""
            return a


def test_skill_refuses_a_function_without_docstring() -> None:
    with pytest.raises(TypeError, match="has no docstring"):
        @skill("demo.bad")
        def bad(a: int) -> int:
            return a


def test_skill_refuses_star_args() -> None:
    with pytest.raises(TypeError, match=r"\*args"):
        @skill("demo.bad")
        def bad(*parts: str) -> str:
            """Bad."""
            return ""


def test_skill_refuses_an_undotted_name() -> None:
    with pytest.raises(TypeError, match="dotted"):
        @skill("nodots")
        def bad(a: int) -> int:
            """Bad."""
            return a


def test_skill_refuses_a_default_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="default 'x' of `n` is not a int"):
        @skill("demo.bad")
        def bad(n: int = "x") -> int:  # type: ignore[assignment]
            """Bad."""
            return 0


def test_context_parameter_is_injected_not_a_param(ctx: SkillContext) -> None:
    @skill("demo.run_id")
    def run_id(ctx: SkillContext, suffix: str) -> str:
        """The run id with a suffix."""
        return ctx.run_id + suffix

    built = run_id.__pipe_skill__
    assert built.takes_context
    assert [p.name for p in built.params] == ["suffix"]
    assert built.invoke(["!"], {}, ctx) == "test!"


def test_context_parameter_must_be_named_ctx() -> None:
    with pytest.raises(TypeError, match="must be named `ctx`"):
        @skill("demo.bad")
        def bad(context: SkillContext) -> str:
            """Bad."""
            return ""


# --- signature and schemas --------------------------------------------------------------------


def test_signature_uses_pipe_type_syntax_and_displayed_defaults() -> None:
    assert demo_split.__pipe_skill__.signature() == (
        "demo.split(text: str, sep: str? = none, maxsplit: int = -1) -> list[str]"
    )

    @skill("demo.join")
    def join(items: list[str], sep: str = ", ", flag: bool = True) -> str:
        """Join."""
        return sep.join(items)

    assert join.__pipe_skill__.signature() == 'demo.join(items: list[str], sep: str = ", ", flag: bool = true) -> str'


def test_input_schema_comes_from_type_hints_and_param_docs() -> None:
    schema = demo_split.__pipe_skill__.input_schema()
    assert schema["type"] == "object"
    assert schema["required"] == ["text"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["text"] == {"type": "string", "description": "The text to split."}
    assert schema["properties"]["sep"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert schema["properties"]["sep"]["default"] is None
    assert schema["properties"]["maxsplit"] == {
        "type": "integer", "description": "The most splits to do.", "default": -1,
    }


def test_schemas_of_nested_types() -> None:
    @skill("demo.nested")
    def nested(table: dict[str, list[float]], where: Path, anything: Any) -> dict[str, int] | None:
        """Nested.

        Returns:
            Counts per key.
        """
        return None

    built = nested.__pipe_skill__
    props = built.input_schema()["properties"]
    assert props["table"] == {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "number"}}}
    assert props["where"] == {"type": "string", "format": "path"}
    assert props["anything"] == {}
    assert built.output_schema() == {
        "anyOf": [{"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "null"}],
        "description": "Counts per key.",
    }


# --- bind -------------------------------------------------------------------------------------


def test_bind_matches_positional_then_keyword_and_fills_defaults() -> None:
    built = demo_split.__pipe_skill__
    assert built.bind(["a,b"], {"sep": ","}) == {"text": "a,b", "sep": ",", "maxsplit": -1}
    assert built.bind([], {"maxsplit": 1, "text": "x"}) == {"text": "x", "sep": None, "maxsplit": 1}


def test_bind_refuses_too_many_positional_arguments() -> None:
    with pytest.raises(SkillError) as info:
        demo_split.__pipe_skill__.bind(["a", "b", 1, 2], {})
    assert info.value.message == "demo.split takes at most 3 positional arguments (text, sep, maxsplit), got 4"
    assert "demo.split(text: str" in info.value.hint


def test_bind_refuses_unknown_keyword_with_did_you_mean() -> None:
    with pytest.raises(SkillArgumentError) as info:
        demo_split.__pipe_skill__.bind(["a"], {"sepp": ","})
    err = info.value
    assert (err.skill, err.param) == ("demo.split", "sepp")
    assert "demo.split" in err.message and "`sepp`" in err.message
    assert "`text`, `sep`, `maxsplit`" in err.message
    assert "unknown keyword" in err.message
    assert err.hint == "did you mean `sep`?"


def test_bind_refuses_a_missing_required_argument() -> None:
    with pytest.raises(SkillArgumentError) as info:
        demo_split.__pipe_skill__.bind([], {"sep": ","})
    assert info.value.message == "demo.split: argument `text` expected str, got nothing (it is required)"


def test_bind_refuses_an_argument_given_twice() -> None:
    with pytest.raises(SkillArgumentError) as info:
        demo_split.__pipe_skill__.bind(["a"], {"text": "b"})
    assert info.value.message == (
        "demo.split: argument `text` expected one value, got two (one positional and one by keyword)"
    )


# --- invoke -----------------------------------------------------------------------------------


def test_invoke_calls_the_function_with_bound_arguments(ctx: SkillContext) -> None:
    assert demo_split.__pipe_skill__.invoke(["a-b-c", "-"], {"maxsplit": 1}, ctx) == ["a", "b-c"]


def test_invoke_refuses_an_argument_of_the_wrong_type(ctx: SkillContext) -> None:
    with pytest.raises(SkillArgumentError) as info:
        demo_split.__pipe_skill__.invoke([3], {}, ctx)
    err = info.value
    assert (err.skill, err.param, err.expected, err.got) == ("demo.split", "text", "str", "int 3")
    assert err.message == "demo.split: argument `text` expected str, got int 3"


def test_invoke_refuses_a_bool_where_an_int_is_expected(ctx: SkillContext) -> None:
    with pytest.raises(SkillArgumentError, match="argument `maxsplit` expected int, got bool true"):
        demo_split.__pipe_skill__.invoke(["a"], {"maxsplit": True}, ctx)


def test_invoke_shortens_long_values_in_errors(ctx: SkillContext) -> None:
    with pytest.raises(SkillArgumentError) as info:
        demo_split.__pipe_skill__.invoke([list(range(100))], {}, ctx)
    assert info.value.got.startswith("list[int] [0, 1, 2")
    assert len(info.value.got) < 60


def test_invoke_passes_a_record_where_a_dict_is_expected(ctx: SkillContext) -> None:
    @skill("demo.keys")
    def keys(d: dict[str, Any]) -> list[str]:
        """Keys."""
        assert type(d) is dict
        return list(d)

    record = RecordValue("Point", {"x": 1, "y": 2})
    assert keys.__pipe_skill__.invoke([record], {}, ctx) == ["x", "y"]


def test_invoke_gives_path_parameters_a_path_object(ctx: SkillContext) -> None:
    @skill("demo.suffix")
    def suffix(p: Path) -> str:
        """Suffix."""
        assert isinstance(p, Path)
        return p.suffix

    assert suffix.__pipe_skill__.invoke(["a/b.txt"], {}, ctx) == ".txt"


class Point(pydantic.BaseModel):
    x: int
    y: int


@pytest.mark.parametrize(
    ("returned", "declared", "expected"),
    [
        ((1, 2), list[int], [1, 2]),
        (PurePosixPath("a/b"), str, "a/b"),
        ({3, 1, 2}, list[int], [1, 2, 3]),
        (frozenset({"b", "a"}), list[str], ["a", "b"]),
        (Point(x=1, y=2), dict[str, int], {"x": 1, "y": 2}),
        ({"k": (1, PurePosixPath("p"))}, dict[str, Any], {"k": [1, "p"]}),
    ],
)
def test_invoke_converts_results_to_pipe_values(returned: Any, declared: Any, expected: Any, ctx: SkillContext) -> None:
    def produce() -> int:
        """Produce a value."""
        return returned

    produce.__annotations__["return"] = declared
    built = make_skill(produce, name="demo.produce")
    assert built.invoke([], {}, ctx) == expected


def test_invoke_refuses_a_result_of_the_wrong_type(ctx: SkillContext) -> None:
    @skill("demo.buggy")
    def buggy(n: int) -> int:
        """Claims an int, returns text."""
        return str(n)  # type: ignore[return-value]

    with pytest.raises(SkillError) as info:
        buggy.__pipe_skill__.invoke([5], {}, ctx)
    assert info.value.message == 'skill demo.buggy returned str "5", but declares int'
    assert info.value.hint == "this is a bug in the skill"


def test_invoke_lets_skill_errors_and_other_exceptions_through_unchanged(ctx: SkillContext) -> None:
    original = SkillError("nope", hint="try again")

    @skill("demo.fails")
    def fails(kind: str) -> int:
        """Fails."""
        if kind == "skill":
            raise original
        raise ZeroDivisionError("boom")

    with pytest.raises(SkillError) as info:
        fails.__pipe_skill__.invoke(["skill"], {}, ctx)
    assert info.value is original
    with pytest.raises(ZeroDivisionError, match="boom"):
        fails.__pipe_skill__.invoke(["other"], {}, ctx)


# --- registry ---------------------------------------------------------------------------------


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(textwrap.dedent(source), module.__dict__)
    return module


def test_register_accepts_skill_functions_plain_functions_and_skills() -> None:
    def plain(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    registry = SkillRegistry()
    from_mark = registry.register(demo_split)
    from_plain = registry.register(plain, name="calc.add", origin="tests")
    from_skill = registry.register(demo_split.__pipe_skill__, name="demo.split2")
    assert registry.get("demo.split") is from_mark and from_mark.origin == "local"
    assert from_plain.origin == "tests" and from_plain.signature() == "calc.add(a: int, b: int = 2) -> int"
    assert from_skill.name == "demo.split2" and from_skill.func is demo_split
    assert len(registry) == 3 and "calc.add" in registry and "calc.sub" not in registry


def test_register_refuses_a_duplicate_name_naming_both_origins() -> None:
    registry = SkillRegistry()
    registry.register(demo_split, origin="first-pkg")
    with pytest.raises(ValueError) as info:
        registry.register(demo_split, origin="second-pkg")
    assert "demo.split" in str(info.value)
    assert "first-pkg" in str(info.value) and "second-pkg" in str(info.value)


def test_register_module_takes_only_skills_defined_in_that_module() -> None:
    module = _module("pipe_test_mod_a", '''
        from orgtree_lang.runtime.skills import skill

        @skill("mod.one")
        def one() -> int:
            """One."""
            return 1

        @skill("mod.two", pure=True)
        def two() -> int:
            """Two."""
            return 2

        def not_a_skill() -> int:
            """Plain."""
            return 0
    ''')
    module.imported = demo_split  # defined elsewhere, so not registered with this module
    registry = SkillRegistry()
    registry.register_module(module, origin="mod-dist")
    assert registry.names() == ["mod.one", "mod.two"]
    assert {s.origin for s in registry} == {"mod-dist"}
    assert registry.get("mod.two").pure


def test_names_namespaces_and_in_namespace() -> None:
    registry = SkillRegistry()
    for name in ["b.x", "a.b.c", "a.d", "a.b.e"]:
        registry.register(demo_split, name=name)
    assert registry.names() == ["a.b.c", "a.b.e", "a.d", "b.x"]
    assert registry.namespaces() == {"a", "a.b", "b"}
    assert [s.name for s in registry.in_namespace("a.b")] == ["a.b.c", "a.b.e"]
    assert [s.name for s in registry.in_namespace("a")] == ["a.b.c", "a.b.e", "a.d"]
    assert registry.in_namespace("c") == []


def test_suggest_finds_the_closest_name() -> None:
    registry = default_registry(plugins=False)
    assert registry.suggest("text.spilt") == "text.split"
    assert registry.suggest("txt.upper") == "text.upper"
    assert registry.suggest("zzzz.qqqq") is None


def test_fingerprint_is_a_sha256_of_signatures_and_changes_with_them() -> None:
    registry = SkillRegistry()
    registry.register(demo_split)
    expected = hashlib.sha256(
        b"demo.split(text: str, sep: str? = none, maxsplit: int = -1) -> list[str] pure=True\n"
    ).hexdigest()
    assert registry.fingerprint() == expected
    other = SkillRegistry()
    other.register(demo_split)
    assert other.fingerprint() == expected
    other.register(demo_split, name="demo.more")
    assert other.fingerprint() != expected


def test_default_registry_holds_the_stdlib_with_origin_stdlib() -> None:
    registry = default_registry(plugins=False)
    assert {"text", "json", "math", "lists", "dicts", "fs", "time"} <= registry.namespaces()
    assert {s.origin for s in registry} == {"stdlib"}
    assert registry.get("fs.read").takes_context and not registry.get("fs.read").pure
    assert registry.get("text.len").pure


def test_default_registries_are_independent() -> None:
    first = default_registry(plugins=False)
    first.register(demo_split)
    assert "demo.split" not in default_registry(plugins=False)


# --- plugins ----------------------------------------------------------------------------------


def _install_plugin(root: Path, monkeypatch: pytest.MonkeyPatch, module: str, dist: str, body: str) -> None:
    """A real installed distribution on sys.path: a package plus its dist-info with an entry point."""
    pkg = root / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(body))
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[orgtree_lang.skills]\n{module} = {module}:register\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, module, raising=False)


_GOOD_PLUGIN = '''
    from orgtree_lang.runtime.skills import skill

    @skill("shout.loud", pure=True)
    def loud(text: str) -> str:
        """Shout the text."""
        return text.upper() + "!"

    def register(registry):
        registry.register(loud)
'''


def test_load_plugins_discovers_installed_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctx: SkillContext) -> None:
    _install_plugin(tmp_path, monkeypatch, "pipe_plugin_good", "pipe-plugin-good", _GOOD_PLUGIN)
    registry = SkillRegistry()
    assert registry.load_plugins() == ["pipe_plugin_good"]
    loud = registry.get("shout.loud")
    assert loud is not None and loud.origin == "pipe-plugin-good"
    assert loud.invoke(["hi"], {}, ctx) == "HI!"
    assert registry.load_plugins() == []  # already loaded: not registered twice


def test_default_registry_loads_plugins_unless_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, monkeypatch, "pipe_plugin_env", "pipe-plugin-env", _GOOD_PLUGIN)
    monkeypatch.delenv("PIPE_NO_PLUGINS", raising=False)
    assert "shout.loud" in default_registry()
    assert "shout.loud" not in default_registry(plugins=False)
    monkeypatch.setenv("PIPE_NO_PLUGINS", "1")
    assert "shout.loud" not in default_registry()
    assert "shout.loud" in default_registry(plugins=True)
    monkeypatch.setenv("PIPE_NO_PLUGINS", "0")
    assert "shout.loud" in default_registry()


def test_a_broken_plugin_raises_a_skill_error_naming_the_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, monkeypatch, "pipe_plugin_broken", "pipe-plugin-broken", '''
        def register(registry):
            raise RuntimeError("missing config")
    ''')
    with pytest.raises(SkillError) as info:
        SkillRegistry().load_plugins()
    assert "`pipe_plugin_broken`" in info.value.message
    assert "pipe-plugin-broken" in info.value.message
    assert "missing config" in info.value.message
    assert "PIPE_NO_PLUGINS" in info.value.hint


def test_a_plugin_that_fails_to_import_raises_a_skill_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, monkeypatch, "pipe_plugin_noimport", "pipe-plugin-noimport", "import no_such_module_xyz\n")
    with pytest.raises(SkillError, match="`pipe_plugin_noimport`.*No module named 'no_such_module_xyz'"):
        SkillRegistry().load_plugins()
