"""Model answers shared by the decomposer tests: a valid triage module and reviewer verdicts."""

from __future__ import annotations

import json

# A module for a `classify(report: str) -> label: str` block: bug if the report mentions a crash.
GOOD = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(text.lower(report), "crash"):
        return "bug"
    return "question"
```'''
WRONG_TYPE = "```pipe\npipeline main(report: str) -> int:\n    return 1\n```"
NO_CONCERNS = json.dumps({"concerns": [], "summary": "fits the spec"})
ONE_CONCERN = json.dumps({"concerns": [{"id": "c1", "severity": "blocking", "spec_basis": "bug if it mentions a crash",
                                        "evidence": "`Crash` in capitals is missed", "suggested_fix": "lower-case it"}],
                          "summary": "one problem"})
