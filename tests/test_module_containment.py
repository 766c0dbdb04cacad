"""Generated modules contained like untrusted code: no run changes a later run's code, saved modules are checked
again on every reuse, and every child runs within default limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from decompose_testing import NO_CONCERNS

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


def pipe_in(folder, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", *args], cwd=folder, timeout=120,
                          capture_output=True, text=True, env=dict(os.environ, PIPE_NO_PLUGINS="1"))


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
