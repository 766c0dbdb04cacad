"""Hostile sizes and depths in sources and inputs end in clear errors with exit 65 or 2, never a traceback."""

from __future__ import annotations

import json

from cli_testing import pipe


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_5000_deep_list_is_a_compile_error(tmp_path):
    source = _write(tmp_path, "deep.pipe", "pipeline main() -> int:\n    x = " + "[" * 5000 + "]" * 5000 + "\n    return 1\n")
    result = pipe("check", source, cwd=tmp_path)
    assert result.returncode == 65, result.stderr
    assert "Traceback" not in result.stderr
    assert "deep.pipe:2:" in result.stderr and "nested more than 100 deep" in result.stderr


def test_deeply_nested_ifs_are_a_compile_error(tmp_path):
    lines = ["pipeline main() -> int:"] + [" " * (i + 1) + "if true:" for i in range(400)]
    lines += [" " * 401 + "return 1", " return 0"]
    source = _write(tmp_path, "ifs.pipe", "\n".join(lines) + "\n")
    result = pipe("run", source, cwd=tmp_path)
    assert result.returncode == 65, result.stderr
    assert "Traceback" not in result.stderr and "nested more than 100 deep" in result.stderr


def test_long_operator_chain_is_a_compile_error(tmp_path):
    source = _write(tmp_path, "neg.pipe", "pipeline main() -> int:\n    return " + "- " * 20000 + "1\n")
    result = pipe("check", source, cwd=tmp_path)
    assert result.returncode == 65, result.stderr
    assert "too deeply" in result.stderr


def test_nesting_within_the_limit_still_compiles(tmp_path):
    source = _write(tmp_path, "ok.pipe", "pipeline main() -> int:\n    x = " + "[" * 60 + "]" * 60 + "\n    return len(x)\n")
    result = pipe("run", source, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


def test_huge_source_is_refused_quickly_with_the_limit(tmp_path):
    source = _write(tmp_path, "big.pipe", "pipeline main() -> int:\n" + "    x = 1\n" * 1_200_000 + "    return x\n")
    result = pipe("check", source, cwd=tmp_path)
    assert result.returncode == 65, result.stderr
    assert "the limit is 200,000 bytes" in result.stderr


def test_30000_deep_json_input_is_a_usage_error(tmp_path):
    source = _write(tmp_path, "n.pipe", "pipeline main(x: list) -> int:\n    return len(x)\n")
    result = pipe("run", source, "-i", "x=" + "[" * 30000 + "]" * 30000, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "input `x` nests lists or dicts 30000 deep: expected at most 100 levels" in result.stderr
    inputs = _write(tmp_path, "in.json", json.dumps({"x": json.loads("[" * 150 + "]" * 150)}))
    result = pipe("run", source, "--inputs", inputs, cwd=tmp_path)
    assert result.returncode == 2 and "nests lists or dicts 150 deep: expected at most 100 levels" in result.stderr
    inputs = _write(tmp_path, "in.json", json.dumps({"x": json.loads("[" * 100 + "]" * 100)}))
    result = pipe("run", source, "--inputs", inputs, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr  # at the limit: taken
