"""Every scripted model file shown in the docs or shipped with the examples answers validly for its role:
a reviewer's replies are verdicts (or reuse decisions), an author's code replies are .pipe that parses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from orgtree_lang.decompose.reuse import ReuseVerdict
from orgtree_lang.models.scripted import load_rules
from orgtree_lang.review.concerns import Verdict
from orgtree_lang.syntax.parser import parse

ROOT = Path(__file__).resolve().parent.parent
_YAML_BLOCK = re.compile(r"^(`{3,4})yaml\n(.*?)^\1$", re.S | re.M)
_PIPE_BLOCK = re.compile(r"```pipe\n(.*?)```", re.S)
# Files that answer the llm.* skills' prompts (plain text), not the decomposer's requests for modules.
SKILL_ANSWERS = {"examples/models/research.yaml"}


def scripted_files(tmp: Path) -> list[tuple[str, Path]]:
    """(label, path) of every scripted file: example files, and YAML blocks in the docs that hold rules."""
    found = [(str(p.relative_to(ROOT)), p) for p in sorted((ROOT / "examples").rglob("*.yaml"))
             if str(p.relative_to(ROOT)) not in SKILL_ANSWERS]
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for number, match in enumerate(_YAML_BLOCK.finditer(doc.read_text(encoding="utf-8")), 1):
            data = yaml.safe_load(match.group(2))
            rules = data.get("rules") if isinstance(data, dict) else data
            if isinstance(rules, list) and rules and all(isinstance(r, dict) for r in rules):
                path = tmp / f"{doc.stem}_{number}.yaml"
                path.write_text(match.group(2), encoding="utf-8")
                found.append((f"{doc.name} yaml block {number}", path))
    return found


def problems_of(path: Path) -> list[str]:
    problems = []
    for index, rule in enumerate(load_rules(path, str(path))):
        replies = list(rule.replies)
        for reply in replies:
            if rule.role == "reviewer":
                data = json.loads(reply)
                model = ReuseVerdict if "accept" in data else Verdict
                try:
                    model.model_validate(data)
                except ValueError as err:
                    problems.append(f"rule {index + 1}: not a valid {model.__name__}: {err}")
            else:
                blocks = _PIPE_BLOCK.findall(reply)
                if len(blocks) != 1:
                    problems.append(f"rule {index + 1}: an author's reply holds exactly one ```pipe block")
                    continue
                try:
                    parse(blocks[0], "reply.pipe")
                except Exception as err:  # noqa: BLE001 - the message is the point
                    problems.append(f"rule {index + 1}: the module does not parse: {err}")
    return problems


def test_there_are_scripted_files_in_the_docs_and_examples(tmp_path: Path) -> None:
    labels = [label for label, _ in scripted_files(tmp_path)]
    assert any(label.startswith("examples/") for label in labels)
    assert any("models.md" in label for label in labels)


def test_every_scripted_file_answers_validly_for_its_role(tmp_path: Path) -> None:
    problems = {label: problems_of(path) for label, path in scripted_files(tmp_path)}
    assert {label: found for label, found in problems.items() if found} == {}


def test_an_incomplete_reviewer_verdict_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("rules:\n  - role: reviewer\n    reply: '{\"concerns\": [{\"id\": \"c1\", \"severity\": "
                    "\"blocking\"}]}'\n  - reply: 'no code here'\n", encoding="utf-8")
    found = problems_of(path)
    assert len(found) == 2 and "not a valid Verdict" in found[0] and "exactly one ```pipe block" in found[1]
