"""Generated modules contained like untrusted code: no run changes a later run's code, saved modules are checked
again on every reuse, and every child runs within default limits."""

from __future__ import annotations

import json

import pytest
from cli_testing import PipeResult, pipe
from decompose_testing import GOOD, NO_CONCERNS

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.decomposer import Decomposer
from orgtree_lang.decompose.store import ModuleStore, body_hash
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.budget import Budget

REGISTRY = default_registry(plugins=False)

# The parent may use fs; its block asks for a module that overwrites a file with `use code`.
KEEPER = '''use fs

pipeline main(target: str) -> str:
    ambiguous overwrite(target: str) -> outcome: str:
        """Replace the file `target` with the text `use code` and say what happened."""
    return outcome
'''
OVERWRITER = '''```pipe
use fs

pipeline main(target: str) -> str:
    try:
        fs.write(target, "use code\\n")
    except err:
        return "refused: " + err.message
    return "written"
```'''
SETTINGS = "[decompose]\nmax_repairs = 1\n"


def pipe_in(folder, *args) -> PipeResult:
    """`pipe ARGS` in `folder`, in this process: what is contained is the generated module, not a process."""
    return pipe(*args, cwd=folder, env={"PIPE_NO_PLUGINS": "1"})


def write_rules(path, reply: str):
    path.write_text(json.dumps([{"reply": reply}]))
    return path


def models(folder, author_reply: str) -> tuple[str, ...]:
    (folder / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": author_reply}]))
    (folder / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    return "--model", "scripted:author.json", "--review-model", "scripted:reviewer.json"


def test_a_generated_child_cannot_rewrite_its_parent_a_saved_module_or_the_settings(tmp_path):
    (tmp_path / "keeper.pipe").write_text(KEEPER)
    (tmp_path / "orgtree.toml").write_text(SETTINGS)
    flags = models(tmp_path, OVERWRITER)
    saved = ".orgtree/modules/keeper/overwrite.pipe"
    outcomes, before = {}, None
    for target in ("keeper.pipe", saved, "orgtree.toml"):
        done = pipe_in(tmp_path, "run", "keeper.pipe", "-i", f"target={target}", *flags)
        assert done.returncode == 0, done.stderr
        outcomes[target] = done.stdout
        before = before if target != "keeper.pipe" else (tmp_path / saved).read_text()
    assert "`keeper.pipe` is a program source (.pipe), and a generated module may not write program sources" \
        in outcomes["keeper.pipe"]
    assert f"`{saved}` is the workspace's settings file or inside the run's state folder" in outcomes[saved]
    assert "`orgtree.toml` is the workspace's settings file" in outcomes["orgtree.toml"]
    assert (tmp_path / "keeper.pipe").read_text() == KEEPER
    assert (tmp_path / "orgtree.toml").read_text() == SETTINGS
    assert (tmp_path / saved).read_text() == before and before.startswith("# orgtree: block = overwrite")


def test_the_writable_sources_setting_never_reaches_a_generated_child(tmp_path):
    (tmp_path / "keeper.pipe").write_text(KEEPER)
    (tmp_path / "orgtree.toml").write_text("[fs]\nwritable_sources = true\n")
    done = pipe_in(tmp_path, "run", "keeper.pipe", "-i", "target=keeper.pipe", *models(tmp_path, OVERWRITER))
    assert done.returncode == 0, done.stderr
    assert "a generated module may not write program sources" in done.stdout
    assert (tmp_path / "keeper.pipe").read_text() == KEEPER


WRITER = '''use fs

pipeline main(name: str) -> int:
    return fs.write(name, "use code\\n")
'''


def test_a_program_may_not_write_pipe_sources_until_a_person_allows_it(tmp_path):
    (tmp_path / "writer.pipe").write_text(WRITER)
    (tmp_path / "next.PIPE").write_text("use text\n")
    for name in ("next.PIPE", "sub/fresh.pipe", "writer.pipe"):
        refused = pipe_in(tmp_path, "run", "writer.pipe", "-i", f"name={name}")
        assert refused.returncode == 70
        assert f"`{name}` is a program source (.pipe); runs may read program sources but not change them" \
            in refused.stderr
        assert "[fs] writable_sources = true" in refused.stderr
    assert (tmp_path / "next.PIPE").read_text() == "use text\n" and not (tmp_path / "sub" / "fresh.pipe").exists()
    (tmp_path / "orgtree.toml").write_text("[fs]\nwritable_sources = true\n")
    allowed = pipe_in(tmp_path, "run", "writer.pipe", "-i", "name=sub/fresh.pipe")
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp_path / "sub" / "fresh.pipe").read_text() == "use code\n"


def test_a_symlink_to_a_source_is_refused_like_the_source(tmp_path):
    (tmp_path / "writer.pipe").write_text(WRITER)
    (tmp_path / "notes.txt").symlink_to("writer.pipe")
    refused = pipe_in(tmp_path, "run", "writer.pipe", "-i", "name=notes.txt")
    assert refused.returncode == 70 and "is a program source (.pipe)" in refused.stderr
    assert (tmp_path / "writer.pipe").read_text() == WRITER


def test_a_malformed_writable_sources_setting_is_a_clear_error(tmp_path):
    (tmp_path / "writer.pipe").write_text(WRITER)
    (tmp_path / "orgtree.toml").write_text('[fs]\nwritable_sources = "yes"\n')
    done = pipe_in(tmp_path, "run", "writer.pipe", "-i", "name=x.txt")
    assert done.returncode == 70
    assert "[fs] writable_sources must be true or false, got 'yes'" in done.stderr
    assert not (tmp_path / "x.txt").exists()


# ---- saved modules are checked again on every reuse ----------------------------------------------------

TRIAGE = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''


def triage_with_saved_module(folder):
    """A workspace whose triage block has a reviewed module saved by a first run; returns the module's path."""
    (folder / "triage.pipe").write_text(TRIAGE)
    first = pipe_in(folder, "run", "triage.pipe", "-i", "report=crash", *models(folder, GOOD))
    assert first.returncode == 0 and first.stdout == "bug\n", first.stderr
    return folder / ".orgtree" / "modules" / "triage" / "classify.pipe"


def test_a_hand_tampered_use_fs_under_a_use_text_parent_is_refused_even_with_a_matching_body_hash(tmp_path):
    path = triage_with_saved_module(tmp_path)
    header, body = ModuleStore(tmp_path).read(path).provenance, ModuleStore(tmp_path).read(path).body
    tampered = body.replace("use text", "use text, fs").replace(
        '    return "question"', '    fs.write("stolen.txt", report)\n    return "question"')
    # The header says the tampered body is the reviewed one: only checking the module against its parent helps.
    header["body-hash"] = body_hash(tampered)
    path.write_text("".join(f"# orgtree: {k} = {v}\n" for k, v in header.items()) + "\n" + tampered)
    done = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=hello")
    assert done.returncode == 70
    assert "`use fs` is not allowed: this block may use only `text`" in done.stderr
    assert "does not fit block `classify` as its parent declares it now" in done.stderr
    assert not (tmp_path / "stolen.txt").exists()


def test_an_edited_module_is_reported_and_refused_until_a_person_accepts_it(tmp_path):
    path = triage_with_saved_module(tmp_path)
    path.write_text(path.read_text().replace('return "question"', 'return "feature"'))
    listed = pipe_in(tmp_path, "modules", "list")
    assert "triage/classify.pipe" in listed.stdout and "[changed since review]" in listed.stdout
    shown = pipe_in(tmp_path, "modules", "show", "classify")
    assert shown.returncode == 0 and 'return "feature"' in shown.stdout
    assert "was changed since it was reviewed" in shown.stderr and "pipe modules accept triage/classify" in shown.stderr
    refused = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=hello")
    assert refused.returncode == 70 and "was changed since it was reviewed; it is not run unreviewed" in refused.stderr
    assert "pipe modules accept triage/classify" in refused.stderr
    accepted = pipe_in(tmp_path, "modules", "accept", "triage/classify")
    assert accepted.returncode == 0, accepted.stderr
    assert "# orgtree: accepted-by = " in path.read_text()
    assert "[changed" not in pipe_in(tmp_path, "modules", "list").stdout
    again = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=hello")
    assert again.returncode == 0 and again.stdout == "feature\n", again.stderr


def test_a_module_with_no_record_of_its_reviewed_body_is_refused(tmp_path):
    path = triage_with_saved_module(tmp_path)
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                            if not line.startswith("# orgtree: body-hash")))
    refused = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash")
    assert refused.returncode == 70 and "has no record of the body its review accepted" in refused.stderr


def test_accept_refuses_an_edit_its_parent_would_never_allow(tmp_path):
    path = triage_with_saved_module(tmp_path)
    path.write_text(path.read_text().replace("use text", "use text, fs"))
    refused = pipe_in(tmp_path, "modules", "accept", "classify")
    assert refused.returncode == 2
    assert "`use fs` is not allowed: this block may use only `text`" in refused.stderr
    assert "accepted-by" not in path.read_text()


# ---- every generated module runs within default limits ---------------------------------------------------

LOOPER = '''```pipe
pipeline main(report: str) -> str:
    n = 0
    while true:
        n = n + 1
    return "never"
```'''
DOUBLER = '''```pipe
pipeline main(report: str) -> str:
    label = report
    for i in range(18):
        label = label + label
    return label
```'''


def test_an_endless_child_stops_at_the_default_step_limit_when_the_parent_has_none(tmp_path):
    author = ScriptedModel.from_file(write_rules(tmp_path / "author.json", LOOPER), role="author")
    reviewer = ScriptedModel.from_file(write_rules(tmp_path / "reviewer.json", NO_CONCERNS), role="reviewer")
    program = compile_source(TRIAGE, "triage.pipe", REGISTRY).program
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=REGISTRY, workspace=tmp_path,
                            parent_file="triage.pipe", parent_source=TRIAGE)
    # No step limit; the clock is only there so that a regression fails instead of hanging.
    machine = plain_machine(program, registry=REGISTRY, context=SkillContext(Workspace(tmp_path)),
                            resolver=decomposer, budget=Budget(max_steps=None, max_seconds=60))
    machine.start(None, {"report": "crash"})
    with pytest.raises(PipeRuntimeError) as info:
        machine.run()
    assert info.value.kind == "budget" and not info.value.catchable
    assert "went over the 1,000,000 steps ([decompose] child_max_steps) a generated module may take" \
        in info.value.message


def test_a_child_over_its_step_limit_is_marked_so_later_runs_refuse_it(tmp_path):
    (tmp_path / "triage.pipe").write_text(TRIAGE)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nchild_max_steps = 2000\n")
    stopped = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", *models(tmp_path, LOOPER))
    assert stopped.returncode == 70
    assert "went over the 2,000 steps ([decompose] child_max_steps) a generated module may take" in stopped.stderr
    path = tmp_path / ".orgtree" / "modules" / "triage" / "classify.pipe"
    assert "# orgtree: budget-failed = " in path.read_text()
    assert "[over its limits]" in pipe_in(tmp_path, "modules", "list").stdout
    # The next run refuses the module at once, with no model configured and nothing run.
    refused = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", "--max-seconds", "20")
    assert refused.returncode == 70
    assert "went over the limits of a generated module in an earlier run" in refused.stderr
    assert "pipe modules accept triage/classify" in refused.stderr


def test_the_child_limits_are_settings_and_hold_for_seconds_too(tmp_path):
    (tmp_path / "triage.pipe").write_text(TRIAGE)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nchild_max_steps = 1000000000\nchild_max_seconds = 1\n")
    stopped = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", *models(tmp_path, LOOPER))
    assert stopped.returncode == 70
    assert "went over the 1 s of wall-clock time ([decompose] child_max_seconds)" in stopped.stderr
    (tmp_path / "orgtree.toml").write_text("[decompose]\nchild_max_steps = 0\n")
    bad = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash")
    assert bad.returncode == 2 and "[decompose] child_max_steps must be more than 0, got 0" in bad.stderr


def test_a_child_stopped_by_the_runs_own_budget_is_not_marked(tmp_path):
    (tmp_path / "triage.pipe").write_text(TRIAGE)
    stopped = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", "--max-steps", "5000",
                      *models(tmp_path, LOOPER))
    assert stopped.returncode == 70 and "steps budget exceeded: limit 5000 steps" in stopped.stderr
    assert "budget-failed" not in (tmp_path / ".orgtree" / "modules" / "triage" / "classify.pipe").read_text()


def test_an_oversized_answer_is_refused_and_marked(tmp_path):
    (tmp_path / "triage.pipe").write_text(TRIAGE)
    refused = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", *models(tmp_path, DOUBLER))
    assert refused.returncode == 70
    assert "went over the 1,000,000 characters of output ([decompose] max_output_chars)" in refused.stderr
    assert refused.stdout == ""
    path = tmp_path / ".orgtree" / "modules" / "triage" / "classify.pipe"
    assert "budget-failed" in path.read_text()
    (tmp_path / "orgtree.toml").write_text("[decompose]\nmax_output_chars = 2000000\n")
    assert pipe_in(tmp_path, "modules", "accept", "classify").returncode == 0
    allowed = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash")
    assert allowed.returncode == 0 and len(allowed.stdout) == 5 * 2 ** 18 + 1, allowed.stderr


LIST_DOUBLER = '''```pipe
pipeline main(report: str) -> str:
    xs = [report]
    for i in range(60):
        xs = xs + xs
    return "never"
```'''


def test_a_child_building_a_huge_value_stops_at_its_memory_limit_and_is_marked(tmp_path):
    (tmp_path / "triage.pipe").write_text(TRIAGE)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nchild_max_memory = 10000000\n")
    stopped = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", *models(tmp_path, LIST_DOUBLER))
    assert stopped.returncode == 70
    assert "went over the 10,000,000 bytes for one value ([decompose] child_max_memory) a generated module may " \
           "take" in stopped.stderr
    assert "budget-failed" in (tmp_path / ".orgtree" / "modules" / "triage" / "classify.pipe").read_text()
