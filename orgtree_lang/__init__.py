"""orgtree_lang: a language for agents that break hard problems down into programs they can run, check and reuse."""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# The grammar and the stdlib live at the top of the repository, beside this folder; an installed wheel holds them
# inside the package (pyproject.toml's package-dir). Imported from a checkout instead (`python -m pytest` or
# `python -m orgtree_lang.cli.main` in the clone), the two subpackages are found where they sit. Only these two
# names are mapped, so nothing else at the top of the clone becomes part of the package.
_HERE = _os.path.dirname(_os.path.abspath(__file__))
_CHECKOUT = _os.path.dirname(_HERE)
_BESIDE = {f"{__name__}.grammar": "grammar", f"{__name__}.stdlib": "stdlib"}


class _CheckoutFolders:
    """Finds orgtree_lang.grammar and orgtree_lang.stdlib in the checkout's grammar/ and stdlib/ folders."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        folder = _BESIDE.get(fullname)
        if folder is None:
            return None
        from importlib.util import spec_from_file_location

        where = _os.path.join(_CHECKOUT, folder)
        return spec_from_file_location(fullname, _os.path.join(where, "__init__.py"),
                                       submodule_search_locations=[where])


if not _os.path.isdir(_os.path.join(_HERE, "stdlib")) and all(
        _os.path.isfile(_os.path.join(_CHECKOUT, folder, "__init__.py")) for folder in _BESIDE.values()):
    _sys.meta_path.insert(0, _CheckoutFolders)
