"""Unpack an older git revision of this repository so a benchmark can time it beside the working tree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


def this_tree() -> str:
    """The folder whose orgtree_lang this process imports (the working tree of an editable install)."""
    return str(Path(__import__("orgtree_lang").__file__).resolve().parent.parent)


def checkout(rev: str, folder: str) -> str:
    """Unpack revision `rev` into `folder`, laid out as an installed copy; a PYTHONPATH of `folder` runs it."""
    archive = subprocess.run(["git", "-C", str(REPOSITORY), "archive", rev], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    # The stdlib and grammar folders are installed as orgtree_lang.stdlib and orgtree_lang.grammar: put them
    # where an installed copy has them, or the editable install's mapping would serve this tree's instead.
    for part in ("stdlib", "grammar"):
        if (Path(folder) / part).is_dir() and not (Path(folder) / "orgtree_lang" / part).exists():
            os.symlink(Path(folder) / part, Path(folder) / "orgtree_lang" / part)
    return folder


def child_env(root: str) -> dict[str, str]:
    """The environment of a subprocess that imports orgtree_lang from `root`, with no plugins."""
    return dict(os.environ, PYTHONPATH=root, PIPE_NO_PLUGINS="1")
