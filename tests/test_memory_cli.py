"""`pipe ctx add | search | show` and the ctx.* skills from a .pipe program, on a real workspace."""

from __future__ import annotations

from orgtree_lang.cli.main import main

NOTES = "# Harbor\n\nThe lighthouse keeper polished the brass lens every evening before the storm.\n"


def test_add_search_and_show_from_the_command_line(tmp_path, capsys):
    (tmp_path / "notes.md").write_text(NOTES)
    assert main(["ctx", "add", str(tmp_path / "notes.md"), "--workspace", str(tmp_path), "--keyword-only"]) == 0
    added = capsys.readouterr().out
    assert added.startswith("#1  ") and "1 pieces" in added
    assert main(["ctx", "search", "brass lens", "--workspace", str(tmp_path), "--mode", "keyword"]) == 0
    found = capsys.readouterr().out
    assert found.startswith("#2  piece L0") and "notes.md bytes 0-" in found
    assert main(["ctx", "show", "2", "--workspace", str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith(NOTES + "\n")


def test_adding_a_binary_file_names_it_and_fails(tmp_path, capsys):
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert main(["ctx", "add", str(tmp_path / "blob.bin"), "--workspace", str(tmp_path), "--keyword-only"]) == 2
    assert "blob.bin looks binary" in capsys.readouterr().err


def test_showing_an_unknown_node_says_where_ids_come_from(tmp_path, capsys):
    assert main(["ctx", "show", "99", "--workspace", str(tmp_path)]) == 2
    assert "no memory node #99" in capsys.readouterr().err


def test_a_pipe_program_adds_fits_expands_and_searches(tmp_path, capsys):
    program = tmp_path / "remember.pipe"
    program.write_text(
        "use ctx\n\n"
        "pipeline main(text: str) -> str:\n"
        "    doc = ctx.add(text, name=\"harbor.md\")\n"
        "    view = ctx.fit([doc], \"gpt-4o:1000\")\n"
        "    hits = ctx.search(\"brass lens\", k=1, mode=\"keyword\")\n"
        "    node = ctx.expand(hits[0][\"node\"])\n"
        "    return view + \"|\" + node[\"text\"]\n")
    assert main(["run", str(program), "-i", f"text={NOTES}", "--no-journal"]) == 0
    assert capsys.readouterr().out == NOTES + "|" + NOTES + "\n"
