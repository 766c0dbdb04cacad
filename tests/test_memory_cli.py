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


def test_ctx_add_and_fit_take_the_model_that_writes_the_summaries(tmp_path, capsys):
    import json

    log = "\n".join(f"line {i}: worker {i % 9} served request {i * 7}" for i in range(600))
    (tmp_path / "worker.log").write_text(log)
    (tmp_path / "summaries.json").write_text(json.dumps([{"match": {"contains": "Covers: ..."},
                                                          "reply": "Covers: lines of a worker log."}]))
    model = ["--model", f"scripted:{tmp_path / 'summaries.json'}", "--window", "4000"]
    assert main(["ctx", "add", str(tmp_path / "worker.log"), "--workspace", str(tmp_path), "--keyword-only",
                 *model]) == 0
    out, err = capsys.readouterr()
    assert "1 level(s) of summaries" in out and "context tree: level 1 done" in err
    written = int(out.split("of summaries, ")[1].split()[0])
    assert written > 0
    # The tree is cached: fitting it again for the same model writes nothing.
    assert main(["ctx", "fit", "1", "--workspace", str(tmp_path), *model, "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["summarized"] == 0 and view["summarizer"].startswith("model:scripted:")
    assert "Covers: lines of a worker log." in view["text"] and view["tokens"] <= view["budget"] == 1000
    assert main(["ctx", "fit", "1", "--workspace", str(tmp_path), *model, "--extractive"]) == 0
    assert "Covers:" not in capsys.readouterr().out and "line 0: worker 0" in log


def test_ctx_fit_without_a_model_says_how_to_name_one(tmp_path, capsys):
    assert main(["ctx", "fit", "1", "--workspace", str(tmp_path)]) == 2
    assert "needs the model that reads the view: pass --model SPEC" in capsys.readouterr().err
