"""The seed skills: each one called through the registry the way the VM calls it, including its error paths."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from orgtree_lang.runtime.errors import SkillArgumentError, SkillError
from orgtree_lang.runtime.skills import SkillContext, SkillRegistry
from orgtree_lang.runtime.values import RecordValue
from orgtree_lang.runtime.workspace import Workspace

pytestmark = pytest.mark.fast


@pytest.fixture
def ctx(root: Path) -> SkillContext:
    return SkillContext(workspace=Workspace(root), run_id="r1", clock=lambda: 1_700_000_000.5)


@pytest.fixture
def call(registry: SkillRegistry, ctx: SkillContext):
    def invoke(name: str, *args: Any, **kwargs: Any) -> Any:
        return registry.get(name).invoke(list(args), kwargs, ctx)

    return invoke


def test_every_stdlib_skill_documents_every_parameter(registry: SkillRegistry) -> None:
    for s in registry:
        assert s.description, s.name
        for p in s.params:
            assert p.doc, f"{s.name}: {p.name}"


def test_only_fs_time_kv_random_ids_code_http_llm_and_research_skills_are_impure(registry: SkillRegistry) -> None:
    impure = {s.name for s in registry if not s.pure}
    assert impure == {
        "fs.read", "fs.write", "fs.append", "fs.list", "fs.exists", "fs.read_bytes", "fs.write_bytes",
        "time.now", "time.sleep",
        "kv.get", "kv.set", "kv.delete", "kv.keys",
        "random.number", "random.int", "random.choice", "random.shuffle", "ids.new",
        "code.run", "http.fetch", "web.search",
        "ctx.add", "ctx.fit", "ctx.expand", "ctx.search",
        "pad.note", "pad.context", "pad.focus", "insight.propose", "insight.remove", "insight.relevant",
        "llm.ask", "llm.extract", "llm.summarize", "llm.classify",
        "research.plan", "research.judge", "research.experiment",  # the research agent's model calls
        "research.read", "research.ask",  # its journaled read of the scratchpad, and the whole agent as one step
    }


# --- text -------------------------------------------------------------------------------------


def test_text_basics(call) -> None:
    assert call("text.len", "héllo") == 5
    assert call("text.lower", "AbC") == "abc"
    assert call("text.upper", "AbC") == "ABC"
    assert call("text.strip", "  x y \n") == "x y"
    assert call("text.strip", "--x--", "-") == "x"
    assert call("text.replace", "a.b.c", ".", "/") == "a/b/c"
    assert call("text.replace", "a.b.c", ".", "/", count=1) == "a/b.c"
    assert call("text.contains", "haystack", "st") is True
    assert call("text.contains", "haystack", "ts") is False
    assert call("text.startswith", "report.pdf", "rep") is True
    assert call("text.endswith", "report.pdf", ".txt") is False


def test_text_split_and_join(call) -> None:
    assert call("text.split", "  a  b c ") == ["a", "b", "c"]
    assert call("text.split", "a,,b", ",") == ["a", "", "b"]
    assert call("text.split", "a,b,c", ",", maxsplit=1) == ["a", "b,c"]
    assert call("text.join", ["a", "b", "c"], "-") == "a-b-c"
    assert call("text.join", ["a", "b"]) == "ab"


def test_text_split_refuses_an_empty_separator(call) -> None:
    with pytest.raises(SkillError, match="separator is empty"):
        call("text.split", "abc", "")


def test_text_join_refuses_non_strings(call) -> None:
    with pytest.raises(SkillArgumentError, match=r"argument `items` expected list\[str\], got list\[int\] \[1, 2\]"):
        call("text.join", [1, 2])


def test_text_format_fills_fields_and_specs(call) -> None:
    values = {"name": "Ada", "score": 2 / 3, "ok": True, "tags": ["a"], "missing": None}
    got = call("text.format", "{name:>5}|{score:.2f}|{ok}|{tags}|{missing}|{{x}}", values)
    assert got == '  Ada|0.67|true|["a"]|none|{x}'


def test_text_format_names_a_missing_key(call) -> None:
    with pytest.raises(SkillError) as info:
        call("text.format", "Hi {name}, {greeting}", {"name": "Ada"})
    assert info.value.message == "text.format: no value for field `greeting`"
    assert "`name`" in info.value.hint


@pytest.mark.parametrize("template", ["{}", "{0}", "{x.__class__}", "{x[0]}"])
def test_text_format_refuses_fields_that_are_not_plain_names(call, template: str) -> None:
    with pytest.raises(SkillError, match="is not a plain name"):
        call("text.format", template, {"x": "abc"})


def test_text_format_reports_a_bad_template(call) -> None:
    with pytest.raises(SkillError, match="bad template"):
        call("text.format", "{oops", {})
    with pytest.raises(SkillError, match="text.format"):
        call("text.format", "{n:d}", {"n": "text"})


def test_text_regex_skills(call) -> None:
    assert call("text.regex_match", r"\d+", "order 66 and 7") == "66"
    assert call("text.regex_match", r"\d+", "none here") is None
    assert call("text.regex_findall", r"(\d)(\d)?", "1 23 456") == ["1", "23", "45", "6"]
    assert call("text.regex_sub", r"(\w+)@(\w+)", r"\2 at \1", "me@host you@there") == "host at me there at you"
    assert call("text.regex_sub", "a", "b", "aaa", count=2) == "bba"


def test_text_regex_bad_pattern_reports_message_and_position(call) -> None:
    with pytest.raises(SkillError) as info:
        call("text.regex_sub", "ab(c", "x", "abc")
    assert info.value.message == "text.regex_sub: bad regular expression `ab(c`: missing ), unterminated subpattern at position 2"
    assert info.value.hint == "ab(c\n  ^"
    with pytest.raises(SkillError, match="text.regex_findall: bad regular expression `\\*`"):
        call("text.regex_findall", "*", "x")


def test_text_regex_sub_bad_replacement(call) -> None:
    with pytest.raises(SkillError, match=r"bad replacement `\\2`: invalid group reference 2"):
        call("text.regex_sub", "(a)", r"\2", "a")


_ARTICLE = (
    "Cats sleep a lot. Cats sleep in the sun and cats sleep at night. "
    "The stock market fell today. Cats sleep because cats are cats. "
    "Bananas are yellow."
)


def test_text_summarize_keeps_short_text_unchanged(call) -> None:
    assert call("text.summarize", "  One sentence only.  ") == "One sentence only."


def test_text_summarize_keeps_the_most_representative_sentences_in_order(call) -> None:
    summary = call("text.summarize", _ARTICLE, max_words=20)
    # "cats"/"sleep" dominate the text; the market and banana sentences are off-topic.
    assert summary == (
        "Cats sleep a lot. Cats sleep in the sun and cats sleep at night. Cats sleep because cats are cats."
    )
    assert len(summary.split()) <= 20


@pytest.mark.parametrize("max_words", [1, 3, 5, 8, 13, 21])
def test_text_summarize_never_exceeds_max_words(call, max_words: int) -> None:
    summary = call("text.summarize", _ARTICLE * 3, max_words=max_words)
    assert 1 <= len(summary.split()) <= max_words
    assert summary == call("text.summarize", _ARTICLE * 3, max_words=max_words)


def test_text_summarize_cuts_one_overlong_sentence(call) -> None:
    text = " ".join(f"w{i}" for i in range(30)) + "."
    assert call("text.summarize", text, max_words=4) == "w0 w1 w2 w3…"


def test_text_summarize_refuses_zero_words(call) -> None:
    with pytest.raises(SkillError, match="max_words must be at least 1, got 0"):
        call("text.summarize", "x", max_words=0)


# --- json -------------------------------------------------------------------------------------


def test_json_parse(call) -> None:
    assert call("json.parse", '{"a": [1, 2.5, null, true], "b": "x"}') == {"a": [1, 2.5, None, True], "b": "x"}


def test_json_parse_reports_line_and_column(call) -> None:
    with pytest.raises(SkillError) as info:
        call("json.parse", '{\n  "a": 1,\n  "b": }')
    assert info.value.message == "json.parse: Expecting value at line 3, column 8"
    assert info.value.hint == '  "b": }\n       ^'


def test_json_dump_keeps_key_order_and_writes_records_as_fields(call) -> None:
    value = {"z": 1, "a": RecordValue("P", {"x": "é"})}
    assert call("json.dump", value) == '{"z": 1, "a": {"x": "é"}}'
    assert call("json.dump", [1, 2], indent=2) == "[\n  1,\n  2\n]"


def test_json_dump_refuses_non_finite_numbers(call) -> None:
    with pytest.raises(SkillError, match="inf cannot be written as JSON"):
        call("json.dump", {"a": [1.0, math.inf]})


# --- math -------------------------------------------------------------------------------------


def test_math_values(call) -> None:
    assert call("math.sqrt", 2) == math.sqrt(2)
    assert call("math.floor", -1.5) == -2
    assert call("math.ceil", 1.2) == 2
    assert call("math.log", math.e ** 2) == pytest.approx(2.0)
    assert call("math.log", 8, base=2) == pytest.approx(3.0)
    assert call("math.exp", 1) == math.e
    assert call("math.pow", 2, 10) == 1024.0
    assert call("math.pow", -8, 3) == -512.0
    assert call("math.clamp", 15, 0, 10) == 10
    assert call("math.clamp", -3, 0, 10) == 0
    assert call("math.clamp", 4.5, 0, 10) == 4.5


@pytest.mark.parametrize(
    ("name", "args", "fragment"),
    [
        ("math.sqrt", [-1], "negative"),
        ("math.floor", [math.inf], "no integer value"),
        ("math.ceil", [math.nan], "no integer value"),
        ("math.log", [0], "greater than 0"),
        ("math.log", [10, 1], "base"),
        ("math.exp", [1000], "too large"),
        ("math.pow", [0, -1], "divides by zero"),
        ("math.pow", [-8, 0.5], "not a real number"),
        ("math.pow", [10, 400], "too large"),
        ("math.clamp", [1, 5, 0], "range is empty"),
    ],
)
def test_math_domain_errors(call, name: str, args: list, fragment: str) -> None:
    with pytest.raises(SkillError, match=fragment) as info:
        call(name, *args)
    assert info.value.message.startswith(name + ":")


def test_math_refuses_text(call) -> None:
    with pytest.raises(SkillArgumentError, match='expected float, got str "4"'):
        call("math.sqrt", "4")


# --- lists ------------------------------------------------------------------------------------


def test_lists_helpers_return_new_lists(call) -> None:
    items = [3, 1, 2]
    assert call("lists.append", items, 4) == [3, 1, 2, 4]
    assert call("lists.extend", items, [5, 6]) == [3, 1, 2, 5, 6]
    assert call("lists.concat", [[1], [], [2, 3]]) == [1, 2, 3]
    assert call("lists.insert", items, 1, 9) == [3, 9, 1, 2]
    assert call("lists.insert", items, 3, 9) == [3, 1, 2, 9]
    assert call("lists.insert", items, -1, 9) == [3, 1, 9, 2]
    assert call("lists.remove_at", items, 0) == [1, 2]
    assert call("lists.remove_at", items, -1) == [3, 1]
    assert call("lists.sort", items) == [1, 2, 3]
    assert call("lists.sort", items, reverse=True) == [3, 2, 1]
    assert items == [3, 1, 2]


@pytest.mark.parametrize(("name", "args"), [("lists.insert", [[1, 2], 3, 0]), ("lists.remove_at", [[1, 2], 2]),
                                            ("lists.remove_at", [[], 0]), ("lists.remove_at", [[1], -2])])
def test_lists_index_out_of_range(call, name: str, args: list) -> None:
    with pytest.raises(SkillError, match="out of range"):
        call(name, *args)


def test_lists_sort_dicts_and_records_by_key(call) -> None:
    people = [{"n": "b", "age": 30}, RecordValue("P", {"n": "a", "age": 20}), {"n": "c", "age": 30}]
    assert call("lists.sort", people, key="age") == [people[1], people[0], people[2]]
    assert call("lists.sort", people, key="age", reverse=True) == [people[0], people[2], people[1]]


def test_lists_sort_errors(call) -> None:
    with pytest.raises(SkillError, match="cannot compare"):
        call("lists.sort", [1, "a"])
    with pytest.raises(SkillError, match="item 1 has no key `age`"):
        call("lists.sort", [{"age": 1}, {"n": 2}], key="age")
    with pytest.raises(SkillError, match="item 0 is not a dict"):
        call("lists.sort", [5], key="age")


def test_lists_unique_flatten_chunk(call) -> None:
    assert call("lists.unique", [1, True, 1, "1", [1], [1], {"a": 1}, {"a": 1}]) == [1, True, "1", [1], {"a": 1}]
    assert call("lists.flatten", [[1, [2]], 3, []]) == [1, [2], 3]
    assert call("lists.chunk", [1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert call("lists.chunk", [], 3) == []
    with pytest.raises(SkillError, match="size must be at least 1, got 0"):
        call("lists.chunk", [1], 0)


def test_lists_index_of_and_count(call) -> None:
    items = ["a", "b", "a", 1, True]
    assert call("lists.index_of", items, "a") == 0
    assert call("lists.index_of", items, True) == 4
    assert call("lists.index_of", items, "z") == -1
    assert call("lists.count", items, "a") == 2
    assert call("lists.count", items, 1) == 1


# --- dicts ------------------------------------------------------------------------------------


def test_dicts_read_helpers(call) -> None:
    d = {"b": 1, "a": [2]}
    assert call("dicts.keys", d) == ["b", "a"]
    assert call("dicts.values", d) == [1, [2]]
    assert call("dicts.items", d) == [["b", 1], ["a", [2]]]
    assert call("dicts.get", d, "a") == [2]
    assert call("dicts.get", d, "z") is None
    assert call("dicts.get", d, "z", 0) == 0
    assert call("dicts.has", d, "b") is True
    assert call("dicts.has", d, "z") is False


def test_dicts_write_helpers_return_new_dicts(call) -> None:
    d = {"a": 1, "b": 2}
    assert call("dicts.set", d, "c", 3) == {"a": 1, "b": 2, "c": 3}
    assert call("dicts.set", d, "a", 9) == {"a": 9, "b": 2}
    assert call("dicts.remove", d, "a") == {"b": 2}
    assert call("dicts.merge", d, {"b": 20, "z": 0}) == {"a": 1, "b": 20, "z": 0}
    assert d == {"a": 1, "b": 2}


def test_dicts_remove_missing_key_suggests(call) -> None:
    with pytest.raises(SkillError) as info:
        call("dicts.remove", {"color": 1}, "colour")
    assert info.value.message == "dicts.remove: no key `colour` in the dict"
    assert info.value.hint == "did you mean `color`?"


def test_dicts_accept_records(call) -> None:
    assert call("dicts.keys", RecordValue("P", {"x": 1, "y": 2})) == ["x", "y"]


def test_dicts_refuse_non_dicts(call) -> None:
    with pytest.raises(SkillArgumentError, match=r"argument `d` expected dict\[str, any\], got list\[int\]"):
        call("dicts.keys", [1])


# --- fs ---------------------------------------------------------------------------------------


def test_fs_write_then_read(call, root: Path) -> None:
    assert call("fs.write", "notes/a.txt", "héllo\n") == len("héllo\n".encode())
    assert (root / "notes" / "a.txt").read_text(encoding="utf-8") == "héllo\n"
    assert call("fs.read", "notes/a.txt") == "héllo\n"


def test_fs_write_replaces_and_leaves_no_temp_files(call, root: Path) -> None:
    call("fs.write", "a.txt", "old contents")
    call("fs.write", "a.txt", "new")
    assert (root / "a.txt").read_text() == "new"
    assert os.listdir(root) == ["a.txt"]


def test_fs_append(call, root: Path) -> None:
    assert call("fs.append", "log/run.txt", "one\n") == 4
    assert call("fs.append", "log/run.txt", "two\n") == 4
    assert (root / "log" / "run.txt").read_text() == "one\ntwo\n"


def test_fs_list_and_exists(call, root: Path) -> None:
    (root / "b.txt").write_text("b")
    (root / "a").mkdir()
    (root / "a" / "inner.txt").write_text("x")
    assert call("fs.list") == ["a/", "b.txt"]
    assert call("fs.list", "a") == ["inner.txt"]
    assert call("fs.exists", "a/inner.txt") is True
    assert call("fs.exists", "a/nope.txt") is False


def test_fs_read_missing_file_names_the_workspace_and_close_names(call, root: Path) -> None:
    (root / "notes.txt").write_text("x")
    with pytest.raises(SkillError) as info:
        call("fs.read", "note.txt")
    assert info.value.message == f"fs.read: no file `note.txt` in workspace {os.path.realpath(root)}"
    assert info.value.hint == "did you mean `notes.txt`?"


def test_fs_read_missing_file_in_subfolder_lists_its_entries(call, root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("x")
    with pytest.raises(SkillError) as info:
        call("fs.read", "docs/zzz.txt")
    assert info.value.hint == "`docs/` has `docs/guide.md`"


def test_fs_read_errors(call, root: Path) -> None:
    (root / "folder").mkdir()
    (root / "bin.dat").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SkillError, match="is a folder"):
        call("fs.read", "folder")
    with pytest.raises(SkillError, match="not UTF-8"):
        call("fs.read", "bin.dat")
    with pytest.raises(SkillError, match="is a folder"):
        call("fs.write", "folder", "x")
    with pytest.raises(SkillError, match="is a file, not a folder"):
        call("fs.list", "bin.dat")
    with pytest.raises(SkillError, match="no folder `nope`"):
        call("fs.list", "nope")


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x"])
def test_fs_skills_are_confined_to_the_workspace(call, path: str) -> None:
    for name, extra in [("fs.read", []), ("fs.write", ["x"]), ("fs.append", ["x"]), ("fs.list", []), ("fs.exists", [])]:
        with pytest.raises(SkillError):
            call(name, path, *extra)


def test_fs_write_through_a_symlinked_folder_is_refused(call, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SkillError, match="symbolic link"):
        call("fs.write", "out/new.txt", "x")
    assert list(outside.iterdir()) == []


def test_fs_refuses_to_change_the_state_folder(call, root: Path) -> None:
    with pytest.raises(SkillError, match="state folder"):
        call("fs.write", ".orgtree/runs/journal.jsonl", "forged")
    assert not (root / ".orgtree").exists()


def test_fs_refuses_to_change_the_settings_file(call, root: Path) -> None:
    (root / "orgtree.toml").write_text('[http]\nallow = []\n')
    for name, args in (("fs.write", ("orgtree.toml", "[http]\nallow = ['https://evil.example']\n")),
                       ("fs.append", ("orgtree.toml", "\n[sandbox]\nallow_install = true\n")),
                       ("fs.write", ("./sub/../orgtree.toml", "x"))):
        with pytest.raises(SkillError, match="settings file"):
            call(name, *args)
    assert (root / "orgtree.toml").read_text() == '[http]\nallow = []\n'
    assert "settings" not in call("fs.read", "orgtree.toml")  # reading it is allowed



def test_fs_refuses_the_settings_file_through_a_symbolic_or_hard_link(call, root: Path) -> None:
    (root / "conf").mkdir()
    (root / "conf" / "real.toml").write_text("[sandbox]\nmax_timeout = 5\n")
    (root / "orgtree.toml").symlink_to("conf/real.toml")
    for name, args in (("fs.write", ("conf/real.toml", "[sandbox]\nmax_timeout = 9999\n")),
                       ("fs.append", ("conf/real.toml", "allow_install = true\n"))):
        with pytest.raises(SkillError, match="settings file"):
            call(name, *args)
    assert (root / "conf" / "real.toml").read_text() == "[sandbox]\nmax_timeout = 5\n"
    os.link(root / "conf" / "real.toml", root / "alias.toml")
    with pytest.raises(SkillError, match="settings file"):
        call("fs.append", "alias.toml", "allow_install = true\n")
    (root / "orgtree.toml").unlink()
    (root / "orgtree.toml").symlink_to("conf/later.toml")  # dangling: writing its target would create the settings
    with pytest.raises(SkillError, match="settings file"):
        call("fs.write", "conf/later.toml", "[http]\nallow = ['https://evil.example']\n")
    assert not (root / "conf" / "later.toml").exists()


def test_fs_write_keeps_the_mode_of_an_existing_file(call, root: Path) -> None:
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    call("fs.write", "run.sh", "#!/bin/sh\necho new\n")
    assert (script.stat().st_mode & 0o777, script.read_text()) == (0o755, "#!/bin/sh\necho new\n")


# --- time -------------------------------------------------------------------------------------


def test_time_now_reads_the_context_clock(call) -> None:
    # 1_700_000_000 s after the epoch is 2023-11-14 22:13:20 UTC.
    assert call("time.now") == "2023-11-14T22:13:20Z"


def test_time_now_follows_a_different_clock(registry: SkillRegistry, root: Path) -> None:
    ctx = SkillContext(workspace=Workspace(root), clock=lambda: 86_400.0 * 366)
    assert registry.get("time.now").invoke([], {}, ctx) == "1971-01-02T00:00:00Z"


def test_json_round_trip_of_a_dump(call) -> None:
    value = {"k": [1, {"n": None}], "s": "x"}
    assert json.loads(call("json.dump", value)) == value


# --- padding, characters, regex groups, json forms, sort keys --------------------------------------


def test_text_pads_and_centres_like_python_and_keeps_longer_text_whole(call) -> None:
    assert call("text.pad_left", "7", 3, "0") == "007"
    assert call("text.pad_right", "ab", 4) == "ab  "
    assert call("text.center", "ab", 6, "*") == "**ab**"
    assert call("text.center", "ab", 5) == "  ab "
    assert call("text.pad_left", "toolong", 3) == "toolong"


def test_text_padding_refuses_a_fill_that_is_not_one_character(call) -> None:
    with pytest.raises(SkillError, match="fill must be exactly one character"):
        call("text.pad_left", "7", 3, "ab")


def test_text_chars_and_regex_groups(call) -> None:
    assert call("text.chars", "héj") == ["h", "é", "j"]
    assert call("text.chars", "") == []
    assert call("text.regex_groups", "([a-z]+)=([0-9]+)(x)?", "-- a=1 b=2") == ["a", "1", None]
    assert call("text.regex_groups", "([0-9]+)", "none here") is None


def test_json_dump_has_a_default_a_compact_and_an_indented_form(call) -> None:
    value = {"a": [1, None], "b": "é"}
    assert call("json.dump", value) == '{"a": [1, null], "b": "é"}'
    assert call("json.dump", value, compact=True) == '{"a":[1,null],"b":"é"}'
    assert call("json.dump", value, indent=2) == '{\n  "a": [\n    1,\n    null\n  ],\n  "b": "é"\n}'


def test_lists_sort_by_a_key_list_keeps_ties_in_order(call) -> None:
    assert call("lists.sort", ["bb", "a", "cc", "d"], key=[2, 1, 2, 1]) == ["a", "d", "bb", "cc"]
    assert call("lists.sort", ["x", "y"], key=[1, 2], reverse=True) == ["y", "x"]


def test_lists_sort_refuses_a_key_list_of_another_length_and_other_keys(call) -> None:
    with pytest.raises(SkillError, match="the key list has 1 values for 2 items"):
        call("lists.sort", ["x", "y"], key=[1])
    with pytest.raises(SkillError, match="key must be none, a field name or a list"):
        call("lists.sort", ["x", "y"], key=3)


def test_time_sleep_waits_and_refuses_negative_or_huge_waits(call) -> None:
    import time

    start = time.monotonic()
    assert call("time.sleep", 0.05) is None
    assert time.monotonic() - start >= 0.05
    with pytest.raises(SkillError, match="between 0 and 3600"):
        call("time.sleep", -1)
