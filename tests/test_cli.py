"""The `pipe` command as a user runs it: exit codes, stdout versus stderr, inputs, --json, budgets, errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_testing import PipeResult
from cli_testing import pipe as run_pipe

pytestmark = pytest.mark.fast


def pipe(*args: str, cwd: Path) -> PipeResult:
    """`pipe ARGS` in this process (the console script's own test below starts a real one)."""
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1"})


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


GREETER = '''\
pipeline main(name: str, times: int = 1, loud: bool = false) -> str:
    """Greet someone."""
    for i in range(times):
        print(f"line {i}")
    if loud:
        return f"HELLO {name}"
    return f"hello {name}"
'''


def test_run_prints_output_then_the_string_result(tmp_path):
    write(tmp_path, "greet.pipe", GREETER)
    result = pipe("run", "greet.pipe", "-i", "name=ada", "-i", "times=2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["line 0", "line 1", "hello ada"]


def test_inputs_are_parsed_by_parameter_type(tmp_path):
    write(tmp_path, "greet.pipe", GREETER)
    result = pipe("run", "greet.pipe", "-i", "name=bo", "-i", "loud=true", cwd=tmp_path)
    assert result.stdout.splitlines()[-1] == "HELLO bo"


def test_inputs_file_supplies_json_inputs(tmp_path):
    write(tmp_path, "greet.pipe", GREETER)
    write(tmp_path, "in.json", json.dumps({"name": "cy", "times": 0}))
    result = pipe("run", "greet.pipe", "--inputs", "in.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello cy\n"


def test_non_string_results_print_as_json(tmp_path):
    write(tmp_path, "r.pipe", 'record P:\n    x: int\n\npipeline main() -> dict[str, any]:\n'
                              '    return {"p": P(x=1), "l": [1, none, true]}\n')
    result = pipe("run", "r.pipe", cwd=tmp_path)
    assert json.loads(result.stdout) == {"p": {"x": 1}, "l": [1, None, True]}


def test_json_envelope_has_output_run_id_status_and_usage(tmp_path):
    write(tmp_path, "greet.pipe", GREETER)
    result = pipe("run", "greet.pipe", "-i", "name=x", "-i", "times=3", "--json", cwd=tmp_path)
    envelope = json.loads(result.stdout)
    assert envelope["status"] == "ok"
    assert envelope["output"] == "hello x"
    assert envelope["printed"] == ["line 0", "line 1", "line 2"]
    assert len(envelope["run_id"]) >= 8
    assert envelope["usage"]["steps"] > 3


def test_missing_input_is_a_usage_error_naming_the_parameter_and_its_type(tmp_path):
    write(tmp_path, "greet.pipe", GREETER)
    result = pipe("run", "greet.pipe", cwd=tmp_path)
    assert result.returncode == 2
    assert "pipe run: pipeline main needs input `name` (str): pass it with -i name=VALUE" in result.stderr
    assert not (tmp_path / ".orgtree" / "runs").exists() or not any((tmp_path / ".orgtree" / "runs").iterdir())


def test_bad_input_value_is_a_usage_error(tmp_path):
    write(tmp_path, "greet.pipe", GREETER)
    result = pipe("run", "greet.pipe", "-i", "name=x", "-i", "times=many", cwd=tmp_path)
    assert result.returncode == 2
    assert "input `times` (int): expected a whole number, got 'many'" in result.stderr


@pytest.mark.parametrize("given,accepted", [("true", True), ("false", True), ("yes", False), ("1", False),
                                            ("True", False)])
def test_bool_inputs_accept_exactly_true_and_false(tmp_path, given, accepted):
    write(tmp_path, "greet.pipe", GREETER)
    result = pipe("run", "greet.pipe", "-i", "name=x", "-i", f"loud={given}", cwd=tmp_path)
    if accepted:
        assert result.returncode == 0 and result.stdout.splitlines()[-1] == ("HELLO x" if given == "true" else "hello x")
    else:
        assert result.returncode == 2
        assert f"input `loud` (bool): expected true or false, got '{given}'" in result.stderr


@pytest.mark.parametrize("data,message", [
    ({"name": "x", "times": "3"}, "input `times` (int): got \"3\""),
    ({"name": "x", "loud": 1}, "input `loud` (bool): got 1"),
    ({"nmae": "x"}, "pipeline main has no parameter `nmae`; did you mean `name`?"),
    ({}, "needs input `name` (str)"),
])
def test_every_problem_with_an_inputs_file_is_a_usage_error_naming_the_parameter(tmp_path, data, message):
    write(tmp_path, "greet.pipe", GREETER)
    write(tmp_path, "in.json", json.dumps(data))
    result = pipe("run", "greet.pipe", "--inputs", "in.json", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_unknown_input_name_suggests_the_parameter(tmp_path):
    write(tmp_path, "greet.pipe", GREETER)
    result = pipe("run", "greet.pipe", "-i", "nme=x", cwd=tmp_path)
    assert result.returncode == 2
    assert "did you mean `name`" in result.stderr


def test_usage_errors_exit_2(tmp_path):
    assert pipe("run", cwd=tmp_path).returncode == 2
    assert pipe("frobnicate", cwd=tmp_path).returncode == 2
    assert pipe("run", "missing.pipe", cwd=tmp_path).returncode == 2
    assert pipe("run", "x.pipe", "--max-steps", "-3", cwd=tmp_path).returncode == 2


def test_compile_error_exits_65_with_location_caret_and_hint(tmp_path):
    write(tmp_path, "bad.pipe", "use text\n\npipeline main() -> int:\n    return lenn(\"abc\")\n")
    result = pipe("run", "bad.pipe", cwd=tmp_path)
    assert result.returncode == 65
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == "bad.pipe:4:12: error: undefined function `lenn`"
    assert lines[1].endswith('return lenn("abc")')
    caret = lines[2]
    assert caret.index("^") == lines[1].index("lenn")
    assert "did you mean `len`?" in result.stderr


def test_runtime_error_shows_pipe_call_stack_and_no_python_traceback(tmp_path):
    write(tmp_path, "div.pipe", "pipeline main(n: int) -> int:\n    return half(n)\n\n"
                                "pipeline half(n: int) -> int:\n    return 10 // n\n")
    result = pipe("run", "div.pipe", "-i", "n=0", cwd=tmp_path)
    assert result.returncode == 70
    assert "runtime error: division by zero" in result.stderr
    assert "div.pipe:5:12" in result.stderr
    after = result.stderr.split(".pipe call stack (most recent call last):\n")[1].splitlines()
    stack = [line.strip() for line in after if line.startswith("  ")]
    assert stack == ["div.pipe:2: in main", "div.pipe:5: in half"]
    assert "pipe resume" in after[-1]
    assert "Traceback" not in result.stderr


def test_debug_shows_the_python_traceback_of_a_crashing_skill(tmp_path):
    # int() of a float string fails inside the text -> int conversion of json.parse output? Use a skill that
    # raises a plain Python error: math.sqrt of a huge int overflows float conversion.
    write(tmp_path, "crash.pipe", "use math\n\npipeline main() -> float:\n    return math.sqrt(10 ** 400)\n")
    quiet = pipe("run", "crash.pipe", cwd=tmp_path)
    loud = pipe("run", "crash.pipe", "--debug", cwd=tmp_path)
    assert quiet.returncode == loud.returncode == 70
    assert "Traceback" not in quiet.stderr
    assert "Traceback" in loud.stderr


def test_step_budget_names_budget_limit_count_and_location(tmp_path):
    write(tmp_path, "spin.pipe", "pipeline main():\n    label again\n    goto again\n")
    result = pipe("run", "spin.pipe", "--max-steps", "50", cwd=tmp_path)
    assert result.returncode == 70
    message = result.stderr.splitlines()[0]
    assert "steps budget exceeded" in message
    assert "limit 50 steps" in message
    assert "used 50" in message
    assert "stopped at spin.pipe:" in message
    assert "--max-steps" in result.stderr


def test_seconds_budget_stops_a_long_run(tmp_path):
    write(tmp_path, "spin.pipe", "pipeline main():\n    while true:\n        pass\n")
    result = pipe("run", "spin.pipe", "--max-seconds", "0.3", cwd=tmp_path)
    assert result.returncode == 70
    assert "seconds budget exceeded: limit 0.3 seconds" in result.stderr


def test_skill_call_budget(tmp_path):
    write(tmp_path, "calls.pipe", 'use text\n\npipeline main():\n    for i in range(10):\n'
                                  '        text.upper("a")\n')
    result = pipe("run", "calls.pipe", "--max-skill-calls", "3", cwd=tmp_path)
    assert result.returncode == 70
    assert "skill calls budget exceeded: limit 3 skill calls, used 3" in result.stderr


def test_entry_selects_a_pipeline_and_ambiguity_is_explained(tmp_path):
    write(tmp_path, "two.pipe", 'pipeline a() -> str:\n    return "A"\n\npipeline b() -> str:\n    return "B"\n')
    assert pipe("run", "two.pipe", "--entry", "b", cwd=tmp_path).stdout == "B\n"
    result = pipe("run", "two.pipe", cwd=tmp_path)
    assert result.returncode == 2
    assert "--entry" in result.stderr and "a, b" in result.stderr


def test_ambiguous_block_without_model_names_block_and_how_to_configure(tmp_path):
    write(tmp_path, "amb.pipe", 'pipeline main(report: str) -> str:\n'
                                '    ambiguous classify(report: str) -> label: str:\n'
                                '        """Label the report as bug, feature or question."""\n'
                                '    return label\n')
    result = pipe("run", "amb.pipe", "-i", "report=crash", cwd=tmp_path)
    assert result.returncode == 70
    assert "ambiguous block `classify`" in result.stderr
    assert "--model" in result.stderr and "PIPE_MODEL" in result.stderr


def test_check_reports_every_error_and_passes_warnings(tmp_path):
    write(tmp_path, "bad.pipe", "pipeline main():\n    x = y\n    break\n    goto nowhere\n")
    write(tmp_path, "warn.pipe", "pipeline main() -> int:\n    return 1\n    print(2)\n")
    bad = pipe("check", "bad.pipe", cwd=tmp_path)
    assert bad.returncode == 65
    assert bad.stderr.count("error:") == 3
    assert "3 errors, 1 warning generated." in bad.stderr  # `goto` after `break` is unreachable
    warn = pipe("check", "warn.pipe", cwd=tmp_path)
    assert warn.returncode == 0
    assert "warning: unreachable code" in warn.stderr


def test_dis_shows_instructions_with_lines(tmp_path):
    write(tmp_path, "d.pipe", "pipeline main() -> int:\n    x = 40\n    return x + 2\n")
    result = pipe("dis", "d.pipe", cwd=tmp_path)
    assert result.returncode == 0
    assert "pipeline main() -> int" in result.stdout
    assert "STORE_LOCAL" in result.stdout and "(x)" in result.stdout
    as_json = json.loads(pipe("dis", "d.pipe", "--json", cwd=tmp_path).stdout)
    assert as_json["format"] == 1


def test_fmt_rewrites_and_check_mode_reports(tmp_path):
    path = write(tmp_path, "f.pipe", "pipeline main()->int:\n  x=(1+2)*3 # keep me\n  return x\n")
    check = pipe("fmt", "--check", "f.pipe", cwd=tmp_path)
    assert check.returncode == 1
    assert "would reformat f.pipe" in check.stderr
    assert path.read_text() == "pipeline main()->int:\n  x=(1+2)*3 # keep me\n  return x\n"
    assert pipe("fmt", "f.pipe", cwd=tmp_path).returncode == 0
    assert path.read_text() == "pipeline main() -> int:\n    x = (1 + 2) * 3  # keep me\n    return x\n"
    assert pipe("fmt", "--check", "f.pipe", cwd=tmp_path).returncode == 0


def test_skills_lists_and_shows_one(tmp_path):
    listing = pipe("skills", cwd=tmp_path)
    assert listing.returncode == 0
    names = [line.split()[0] for line in listing.stdout.splitlines() if line.strip()]
    assert "text.split" in names and "fs.read" in names
    one = pipe("skills", "text.split", cwd=tmp_path)
    assert one.stdout.splitlines()[0].startswith("text.split(text: str")
    unknown = pipe("skills", "text.splt", cwd=tmp_path)
    assert unknown.returncode == 2 and "text.split" in unknown.stderr


def test_every_command_has_help(tmp_path):
    for command in ([], ["run"], ["check"], ["dis"], ["fmt"], ["skills"]):
        result = pipe(*command, "--help", cwd=tmp_path)
        assert result.returncode == 0
        assert "usage: pipe" in result.stdout


def test_fs_skills_are_confined_to_the_workspace(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret.txt").write_text("no")
    write(project, "read.pipe", 'use fs\n\npipeline main(p: str) -> str:\n    return fs.read(p)\n')
    write(project, "ok.txt", "yes")
    assert pipe("run", "read.pipe", "-i", "p=ok.txt", cwd=project).stdout == "yes\n"
    for escape in ("../secret.txt", str(tmp_path / "secret.txt")):
        result = pipe("run", "read.pipe", "-i", f"p={escape}", cwd=project)
        assert result.returncode == 70
        assert "fs.read" in result.stderr
        assert "no" not in result.stdout


def test_workspace_flag_moves_the_fs_root(tmp_path):
    program_dir, data_dir = tmp_path / "prog", tmp_path / "data"
    program_dir.mkdir()
    data_dir.mkdir()
    write(data_dir, "n.txt", "from data")
    write(program_dir, "read.pipe", 'use fs\n\npipeline main() -> str:\n    return fs.read("n.txt")\n')
    result = pipe("run", str(program_dir / "read.pipe"), "--workspace", str(data_dir), cwd=tmp_path)
    assert result.stdout == "from data\n"
    assert (data_dir / ".orgtree" / "runs").is_dir()


@pytest.mark.skipif(shutil.which("pipe") is None, reason="the console script is not installed")
def test_console_script_works_from_any_directory(tmp_path):
    write(tmp_path, "h.pipe", 'pipeline main() -> str:\n    return "hi"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(["pipe", "run", str(tmp_path / "h.pipe")], cwd=elsewhere, capture_output=True,
                            text=True, timeout=60, env=dict(os.environ, PIPE_NO_PLUGINS="1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hi\n"


def test_record_inputs_are_given_as_json_objects(tmp_path):
    write(tmp_path, "rec.pipe", "record Task:\n    title: str\n    points: int = 1\n\n"
                                "pipeline main(task: Task, more: list[Task] = []) -> str:\n"
                                '    return f"{task.title}:{task.points}+{len(more)}"\n')
    ok = pipe("run", "rec.pipe", "-i", 'task={"title": "a"}', "-i", 'more=[{"title": "b", "points": 3}]',
              cwd=tmp_path)
    assert ok.stdout == "a:1+1\n", ok.stderr
    bad = pipe("run", "rec.pipe", "-i", 'task={"title": 5}', cwd=tmp_path)
    assert bad.returncode == 2
    assert "pipe run: input `task` (Task): record Task: field `title` expected str" in bad.stderr


def test_a_module_without_pipelines_says_there_is_nothing_to_run(tmp_path):
    write(tmp_path, "r.pipe", "record R:\n    x: int\n")
    result = pipe("run", "r.pipe", cwd=tmp_path)
    assert result.returncode == 2
    assert "declares no pipeline" in result.stderr


def test_a_result_too_deep_for_json_is_a_runtime_error_not_a_crash(tmp_path):
    write(tmp_path, "deep.pipe", "pipeline main() -> any:\n    x = []\n    for i in range(5000):\n"
                                 "        x = [x]\n    return x\n")
    result = pipe("run", "deep.pipe", cwd=tmp_path)
    assert result.returncode == 70
    assert "cannot be printed as JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_in_process_runner_gives_back_folder_environment_and_streams(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPE_MODEL", "scripted:before.json")
    folder, streams = os.getcwd(), (sys.stdout, sys.stderr)
    write(tmp_path, "env.pipe", 'pipeline main() -> str:\n    return "ran"\n')
    ran = run_pipe("run", "env.pipe", cwd=tmp_path, env={"PIPE_MODEL": None, "PIPE_NO_PLUGINS": "1"})
    assert (ran.returncode, ran.stdout) == (0, "ran\n")
    refused = run_pipe("run", "env.pipe", "--max-steps", "0", cwd=tmp_path)
    assert refused.returncode == 2 and "argument --max-steps: expected a number above 0, got 0" in refused.stderr
    shown = run_pipe("--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: pipe")
    assert (os.getcwd(), os.environ["PIPE_MODEL"], (sys.stdout, sys.stderr)) == (folder, "scripted:before.json", streams)


@pytest.mark.parametrize("verb", ["run", "check", "dis", "test"])
def test_a_folder_given_as_the_program_is_called_a_folder_and_its_programs_are_suggested(tmp_path, verb):
    folder = tmp_path / "progs"
    folder.mkdir()
    for name in ("b.pipe", "a.pipe", "notes.txt"):
        (folder / name).write_text('pipeline main() -> str:\n    return "x"\n')
    result = pipe(verb, str(folder), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == f"pipe {verb}: {folder} is a folder, not a .pipe file"
    assert f"= hint: its programs: a.pipe, b.pipe (e.g. `pipe {verb} {folder / 'a.pipe'}`)" in result.stderr
    assert "no such file" not in result.stderr


def test_a_folder_without_programs_says_so(tmp_path):
    result = pipe("run", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert f"{tmp_path} is a folder, not a .pipe file" in result.stderr
    assert "it holds no .pipe file" in result.stderr


def test_a_missing_program_suggests_the_name_with_pipe_added(tmp_path):
    write(tmp_path, "hello.pipe", 'pipeline main() -> str:\n    return "x"\n')
    result = pipe("run", "hello", cwd=tmp_path)
    assert result.returncode == 2
    assert "pipe run: no such file: hello" in result.stderr and "did you mean hello.pipe?" in result.stderr
