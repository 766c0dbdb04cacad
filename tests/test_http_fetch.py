"""http.fetch keeps to the allowlist in orgtree.toml (redirects re-checked, caps kept); web.extract finds the readable text."""

from __future__ import annotations

import pytest
from sandbox_testing import local_server

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.sandbox.allowlist import HttpPolicy, Origin, UrlRefused
from orgtree_lang.net.fetch import fetch


@pytest.fixture(scope="module")
def servers():
    """Two real servers on 127.0.0.1: `allowed` is on the allowlist, `other` (another port) is not."""
    with local_server() as allowed, local_server() as other:
        yield allowed, other


@pytest.fixture
def policy(servers):
    allowed, other = servers
    allowed.hits.clear()
    other.hits.clear()
    return HttpPolicy(allow=(Origin.parse(f"http://127.0.0.1:{allowed.server_port}"),), timeout=1.0, max_bytes=1000)


def base(server) -> str:
    return f"http://127.0.0.1:{server.server_port}"


def test_an_allowed_url_returns_status_type_and_text(servers, policy):
    got = fetch(base(servers[0]) + "/page", policy)
    assert (got.status, got.content_type, got.truncated) == (200, "text/html; charset=utf-8", False)
    assert "hello from the test server" in got.text and servers[0].hits == ["/page"]


def test_a_redirect_to_an_allowed_place_is_followed(servers, policy):
    got = fetch(base(servers[0]) + "/redirect?to=/page", policy)
    assert got.url.endswith("/page") and got.status == 200 and servers[0].hits == ["/redirect?to=/page", "/page"]


@pytest.mark.parametrize("make_url, why", [
    (lambda a, o: f"http://localhost:{a.server_port}/page", "other host"),
    (lambda a, o: f"https://127.0.0.1:{a.server_port}/page", "other scheme"),
    (lambda a, o: f"http://127.0.0.1:{o.server_port}/page", "other port"),
    (lambda a, o: "ftp://127.0.0.1/page", "unsupported scheme"),
    (lambda a, o: f"file:///etc/passwd", "file scheme"),
    (lambda a, o: f"http://user:pw@127.0.0.1:{a.server_port}/page", "credentials"),
    (lambda a, o: f"http://127.0.0.1:{a.server_port}@localhost:{o.server_port}/page", "userinfo trick"),
])
def test_a_disallowed_url_is_refused_before_any_request(servers, policy, make_url, why):
    allowed, other = servers
    with pytest.raises(UrlRefused):
        fetch(make_url(allowed, other), policy)
    assert allowed.hits == [] and other.hits == [], why


@pytest.mark.parametrize("target", ["http://localhost:{o}/page", "http://127.0.0.1:{o}/page", "https://127.0.0.1:{a}/page"])
def test_a_redirect_to_a_disallowed_place_is_refused_and_never_followed(servers, policy, target):
    allowed, other = servers
    url = target.format(a=allowed.server_port, o=other.server_port)
    with pytest.raises(UrlRefused, match="is not on the allowlist"):
        fetch(f"{base(allowed)}/redirect?to={url}", policy)
    assert other.hits == [] and len(allowed.hits) == 1


def test_endless_redirects_stop_at_the_cap(servers, policy):
    with pytest.raises(UrlRefused, match="more than 5 redirects"):
        fetch(base(servers[0]) + "/loop", policy)
    assert len(servers[0].hits) == 6


def test_a_body_over_the_size_cap_is_cut(servers, policy):
    got = fetch(base(servers[0]) + "/big", policy)
    assert got.truncated and got.text == "x" * 1000


def test_a_slow_server_hits_the_time_cap(servers, policy):
    with pytest.raises(SkillError, match="ReadTimeout"):
        fetch(base(servers[0]) + "/slow", policy)


def test_the_allowlist_comes_from_orgtree_toml_and_an_empty_one_allows_nothing(tmp_path):
    config = tmp_path / "orgtree.toml"
    assert HttpPolicy.from_config(config).allow == ()
    config.write_text('[http]\nallow = ["https://Example.org", "http://127.0.0.1:8080", "https://*.docs.example"]\n')
    policy = HttpPolicy.from_config(config)
    policy.check("https://example.org/a")
    policy.check("http://127.0.0.1:8080/x")
    policy.check("https://api.docs.example/")
    for url in ("https://example.org:8443/", "http://example.org/", "https://docs.example.evil/", "https://evildocs.example/"):
        with pytest.raises(UrlRefused):
            policy.check(url)


def test_a_malformed_allowlist_entry_names_the_file(tmp_path):
    config = tmp_path / "orgtree.toml"
    config.write_text('[http]\nallow = ["example.org"]\n')
    with pytest.raises(SkillError, match=r"orgtree.toml: \[http\]: allowlist entry 'example.org' must look like"):
        HttpPolicy.from_config(config)


def test_the_http_fetch_skill_reads_the_allowlist_from_orgtree_toml(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orgtree.toml").write_text(f'[http]\nallow = ["{base(servers[0])}"]\n')
    skill = default_registry(plugins=False).get("http.fetch")
    got = skill.invoke([base(servers[0]) + "/page"], {}, SkillContext(Workspace(tmp_path)))
    assert got["status"] == 200 and "hello from the test server" in got["text"]
    with pytest.raises(UrlRefused):
        skill.invoke([base(servers[1]) + "/page"], {}, SkillContext(Workspace(tmp_path)))


def test_an_allowlist_widened_during_a_run_is_not_obeyed_before_the_next_run(servers, tmp_path):
    config = tmp_path / "orgtree.toml"
    config.write_text(f'[http]\nallow = ["{base(servers[0])}"]\n')
    skill = default_registry(plugins=False).get("http.fetch")
    ctx = SkillContext(Workspace(tmp_path))
    config.write_text(f'[http]\nallow = ["{base(servers[0])}", "{base(servers[1])}"]\n')
    hits = len(servers[1].hits)
    with pytest.raises(UrlRefused):
        skill.invoke([base(servers[1]) + "/page"], {}, ctx)
    assert len(servers[1].hits) == hits
    assert skill.invoke([base(servers[1]) + "/page"], {}, SkillContext(Workspace(tmp_path)))["status"] == 200


def test_web_extract_keeps_the_article_and_drops_scripts(tmp_path):
    page = ("<html><head><script>var tracking = 'SCRIPT-TEXT';</script></head><body><nav>Home | About</nav>"
            "<article><h1>Sandboxes</h1><p>An interpreter is not a sandbox: restricted executors were escaped "
            "through the class hierarchy again and again.</p></article></body></html>")
    extract = default_registry(plugins=False).get("web.extract")
    text = extract.invoke([page], {}, SkillContext(Workspace(tmp_path)))
    assert "An interpreter is not a sandbox" in text and "SCRIPT-TEXT" not in text and "<p>" not in text
    assert extract.invoke(["<p>just <b>a</b> fragment</p>"], {}, SkillContext(Workspace(tmp_path))) == "just a fragment"
    assert extract.invoke([""], {}, SkillContext(Workspace(tmp_path))) == ""
