"""Starting a run from `pipe serve` over real HTTP: the programs pages, a form from the entry pipeline's typed
parameters, and POST /actions/run, which starts `pipe run` itself with the same checks (token, Host, input
depth, compile errors with file:line:col) and answers with the run's id."""

from __future__ import annotations

import html
import json

import pytest

pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")
pytest.importorskip("uvicorn", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")

from cli_testing import pipe  # noqa: E402
from viewer_testing import Server, wait_for  # noqa: E402

GREET = '''\
record Order:
    item: str
    count: int

pipeline main(name: str, times: int = 2, loud: bool = false, orders: list[Order] = []) -> str:
    """Greet someone, `times` times, and count their orders."""
    for i in range(times):
        print(f"hello, {name}!")
    total = 0
    for order in orders:
        total = total + order.count
    return f"greeted {name} {times} times, loud={loud}, {total} items"

pipeline other(word: str) -> str:
    """Shout a word."""
    return word + "!"
'''
BROKEN = '''\
pipeline main() -> str:
    """Call a skill nobody allowed."""
    return text.upper("x")
'''


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "greet.pipe").write_text(GREET)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "broken.pipe").write_text(BROKEN)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "secret.pipe").write_text(BROKEN)
    return tmp_path


def _show(workspace, run_id: str) -> dict:
    shown = pipe("show", run_id, "--workspace", workspace, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def _start(server, fields: dict, token: str | None = None):
    return server.http.post(f"{server.url}actions/run", json=fields,
                            headers={"X-Pipe-Token": token if token is not None else server.token})


def test_the_programs_page_lists_the_workspace_programs_and_no_hidden_one(workspace):
    with Server(workspace) as server:
        page = server.http.get(f"{server.url}programs").text
    assert 'href="/programs/greet.pipe"' in page and 'href="/programs/tools/broken.pipe"' in page
    assert "secret.pipe" not in page


def test_a_program_page_is_a_form_of_its_entry_pipelines_typed_parameters(workspace):
    with Server(workspace, "--allow-actions") as server:
        page = server.http.get(f"{server.url}programs/greet.pipe").text
        other = server.http.get(f"{server.url}programs/greet.pipe", params={"entry": "other"}).text
    assert '<form class="start" data-action="/actions/run">' in page
    assert "main(name: str, times: int, loud: bool, orders: list[Order]) -&gt; str" in page
    assert "Greet someone, `times` times" in page
    assert 'name="input.name"' in page and "required" in page
    assert 'name="input.times"' in page and "default: 2" in page
    assert '<select name="input.loud"' in page  # a bool is a choice
    assert '<textarea name="input.orders"' in page  # a structured value is JSON
    assert 'name="input.word"' in other and 'value="other"' in other and 'name="input.name"' not in other


def test_a_read_only_program_page_has_no_form_and_says_how_to_run_it(workspace):
    with Server(workspace) as server:
        page = server.http.get(f"{server.url}programs/greet.pipe").text
        refused = _start(server, {"program": "greet.pipe", "input.name": "Ada"})
    assert "<form" not in page and "pipe run greet.pipe --entry main -i name=..." in page
    assert refused.status_code == 403 and "--allow-actions" in refused.json()["message"]
    assert not (workspace / ".orgtree" / "runs").exists()


def test_a_program_that_does_not_compile_shows_its_errors_with_file_line_and_column(workspace):
    with Server(workspace, "--allow-actions") as server:
        page = server.http.get(f"{server.url}programs/tools/broken.pipe").text
        refused = _start(server, {"program": "tools/broken.pipe"})
    cli = pipe("run", "tools/broken.pipe", cwd=workspace)
    assert cli.returncode == 65
    first = cli.stderr.splitlines()[0]  # tools/broken.pipe:3:12: error: ... as `pipe run` prints it
    assert first.startswith("tools/broken.pipe:3:")
    assert html.escape(first) in page
    assert refused.status_code == 422
    said = refused.json()["message"]
    assert said.startswith("the run did not start: `pipe run tools/broken.pipe` said:") and first in said
    assert not list((workspace / ".orgtree" / "runs").iterdir())  # nothing left behind


def test_a_run_started_from_the_page_runs_with_its_inputs_read_by_type(workspace):
    with Server(workspace, "--allow-actions") as server:
        started = _start(server, {"program": "greet.pipe", "entry": "main", "input.name": "Ada", "input.times": "3",
                                  "input.loud": "true", "input.orders": '[{"item": "tea", "count": 4}]'})
        assert started.status_code == 200, started.text
        run_id = started.json()["run"]
        assert started.json()["message"] == f"started run {run_id} of greet.pipe"
        shown = wait_for(lambda: (lambda s: s if s["status"] == "done" else None)(_show(workspace, run_id)),
                         "the started run's end")
        page = server.http.get(f"{server.url}runs/{run_id}").text
    assert shown["result"] == "greeted Ada 3 times, loud=true, 4 items"
    assert shown["printed"] == ["hello, Ada!"] * 3
    assert "greet.pipe" in page and "hello, Ada!" in page
    # What the `pipe run` it started printed is kept beside the run.
    log = (workspace / ".orgtree" / "runs" / run_id / "serve-run.log").read_text()
    assert log.count("hello, Ada!") == 3 and "greeted Ada 3 times" in log


def test_an_empty_field_takes_the_parameters_default_and_a_missing_required_one_is_refused(workspace):
    with Server(workspace, "--allow-actions") as server:
        started = _start(server, {"program": "greet.pipe", "input.name": "Bo", "input.times": ""})
        missing = _start(server, {"program": "greet.pipe", "input.times": "1"})
        wrong = _start(server, {"program": "greet.pipe", "input.name": "Bo", "input.times": "many"})
    run_id = started.json()["run"]
    assert wait_for(lambda: _show(workspace, run_id)["status"] == "done", "the run's end")
    assert _show(workspace, run_id)["result"] == "greeted Bo 2 times, loud=false, 0 items"
    assert missing.status_code == 422 and "pipeline main needs input `name` (str)" in missing.json()["message"]
    assert wrong.status_code == 422 and "input `times` (int): expected a whole number" in wrong.json()["message"]


def test_an_input_nested_past_the_limit_is_refused_before_any_run(workspace):
    deep = "[" * 5000 + "]" * 5000
    with Server(workspace, "--allow-actions") as server:
        refused = _start(server, {"program": "greet.pipe", "input.name": "Ada", "input.orders": deep})
        nested_body = server.http.post(f"{server.url}actions/run", headers={"X-Pipe-Token": server.token},
                                       content='{"program": "greet.pipe", "x": ' + deep + "}")
    assert refused.status_code == 422
    assert "input `orders` nests lists or dicts 5000 deep: expected at most 100 levels" in refused.json()["message"]
    assert nested_body.status_code == 400 and "5001 deep" in nested_body.json()["message"]
    assert not list((workspace / ".orgtree" / "runs").iterdir())


def test_a_start_without_the_token_or_from_another_host_or_for_a_path_is_refused(workspace):
    with Server(workspace, "--allow-actions") as server:
        missing = server.http.post(f"{server.url}actions/run", json={"program": "greet.pipe", "input.name": "A"})
        wrong = _start(server, {"program": "greet.pipe", "input.name": "A"}, token=server.wrong_token)
        rebound = server.http.post(f"{server.url}actions/run", json={"program": "greet.pipe", "input.name": "A"},
                                   headers={"X-Pipe-Token": server.token, "Host": "evil.example"})
        outside = _start(server, {"program": "../greet.pipe"})
        hidden = _start(server, {"program": ".hidden/secret.pipe"})
        absolute = _start(server, {"program": str(workspace / "greet.pipe")})
    assert (missing.status_code, wrong.status_code, rebound.status_code) == (403, 403, 400)
    assert "needs the token" in missing.json()["message"] and "wrong token" in wrong.json()["message"]
    for refused in (outside, hidden, absolute):
        assert refused.status_code == 409 and "no program" in refused.json()["message"]
    assert not (workspace / ".orgtree" / "runs").exists()


def test_pipe_run_takes_the_id_it_is_given_and_refuses_one_taken_or_not_an_id(workspace):
    done = pipe("run", "greet.pipe", "-i", "name=Ada", "--run-id", "first-run", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert _show(workspace, "first-run")["id"] == "first-run"
    again = pipe("run", "greet.pipe", "-i", "name=Ada", "--run-id", "first-run", cwd=workspace)
    assert again.returncode == 2 and "there is a run first-run in" in again.stderr
    path = pipe("run", "greet.pipe", "-i", "name=Ada", "--run-id", "../elsewhere", cwd=workspace)
    assert path.returncode == 2 and "--run-id expects letters, digits, - and _" in path.stderr


PICTURE = '''\
pipeline main(picture: bytes) -> str:
    """Say what the picture is."""
    return f"{picture.media_type} {picture.size}"
'''


def test_a_bytes_input_from_the_page_is_a_file_of_the_workspace_and_never_one_outside_it(workspace, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "secret.png"
    outside.write_bytes(b"\x89PNG\r\n\x1a\nthe host's own file")
    (workspace / "picture.pipe").write_text(PICTURE)
    (workspace / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\n0123")
    (workspace / "link.png").symlink_to(outside)
    with Server(workspace, "--allow-actions") as server:
        form = server.http.get(f"{server.url}programs/picture.pipe").text
        started = _start(server, {"program": "picture.pipe", "input.picture": "cat.png"})
        refused = [_start(server, {"program": "picture.pipe", "input.picture": given})
                   for given in (str(outside), "../" + outside.name, "link.png", "nope.png")]
    assert "a file of the workspace" in html.unescape(form)
    assert started.status_code == 200, started.text
    run_id = started.json()["run"]
    assert wait_for(lambda: _show(workspace, run_id)["status"] == "done", "the run's end")
    assert _show(workspace, run_id)["result"] == "image/png 12"
    assert [answer.status_code for answer in refused] == [400] * 4, [answer.text for answer in refused]
    assert all("must name a file of the workspace" in answer.json()["message"] for answer in refused[:3])
    assert "the workspace has no file `nope.png`" in refused[3].json()["message"]
    assert len(json.loads(pipe("runs", "--workspace", workspace, "--json").stdout)) == 1
