"""Write the VS Code TextMate grammar (editors/vscode/syntaxes/pipe.tmLanguage.json, the one source) as the plist
.tmLanguage that Sublime Text, TextMate and other TextMate-grammar editors load: editors/sublime/Pipe.tmLanguage.

    python editors/export_grammar.py          # after changing the JSON grammar; a test fails until it is run
"""

from __future__ import annotations

import json
import plistlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "vscode" / "syntaxes" / "pipe.tmLanguage.json"
TARGET = HERE / "sublime" / "Pipe.tmLanguage"


def plist_grammar() -> bytes:
    grammar = {key: value for key, value in json.loads(SOURCE.read_text(encoding="utf-8")).items() if key != "$schema"}
    return plistlib.dumps(grammar, sort_keys=False)


if __name__ == "__main__":
    TARGET.write_bytes(plist_grammar())
    print(f"wrote {TARGET}")
