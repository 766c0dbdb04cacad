"""orgtree_lang: a language for agents that break hard problems down into programs they can run, check and reuse."""

from pathlib import Path as _Path

__version__ = "0.1.0"

# An installed wheel carries grammar/ and stdlib/ inside this package. In a source checkout they sit
# beside it (see DESIGN.md), so let `orgtree_lang.grammar` and `orgtree_lang.stdlib` resolve there too.
_checkout = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "grammar").is_dir() and (_checkout / "grammar" / "pipe.lark").is_file():
    __path__.append(str(_checkout))  # noqa: F821 - __path__ is defined for packages
