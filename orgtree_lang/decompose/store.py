"""Generated child modules saved as readable .pipe source with a provenance header, found again by spec hash."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.runtime.errors import PipeError
from orgtree_lang.runtime.files import write_atomic

HEADER = "# orgtree: "
BODY_HASH = "body-hash"  # the sha256 of the body its review (or a person's `pipe modules accept`) approved
BUDGET_FAILED = "budget-failed"  # set when a run of the module went over the limits of a generated module


class StoreError(PipeError):
    """A module the store refuses to save (it does not compile), or a saved file it cannot read."""


@dataclass
class SavedModule:
    path: Path
    provenance: dict[str, str]
    body: str  # the module without its provenance header
    text: str = ""  # the whole file as read, header included: what a reuse compiles and runs

    @property
    def spec_hash(self) -> str:
        return self.provenance.get("spec-hash", "")

    @property
    def changed_since_review(self) -> bool:
        """True if the body is not the one its review or a person accepted (or the header has no record of it)."""
        return self.provenance.get(BODY_HASH) != body_hash(self.body)

    @property
    def budget_failure(self) -> str | None:
        """What went over a generated module's limits in a run of it, until a person accepts it again."""
        return self.provenance.get(BUDGET_FAILED)

    @property
    def refusals(self) -> list[str]:
        """Why runs refuse to reuse the module until a person accepts it (empty when they reuse it)."""
        refusals = []
        if self.changed_since_review:
            refusals.append("changed since review" if self.provenance.get(BODY_HASH) else "no reviewed body-hash")
        if self.budget_failure:
            refusals.append("over its limits")
        return refusals

    @property
    def review_subject(self) -> str:
        """The concern ledger's subject for the module's review (older headers lack it: rebuilt from the spec)."""
        parent = Path(self.provenance.get("parent", "").split(":")[0]).name
        return self.provenance.get("review-subject") or f"{parent}:{self.provenance.get('block')}:{self.spec_hash}"


class ModuleStore:
    """`<workspace>/.orgtree/modules/<parent module>/<block>.pipe`."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)
        self.root = self.workspace / ".orgtree" / "modules"

    def path_for(self, parent_file: str, block: str) -> Path:
        return self.root / Path(parent_file).stem / f"{block}.pipe"

    def save(self, parent_file: str, block: str, body: str, provenance: dict[str, str], registry) -> SavedModule:
        """Write atomically, after checking that the file as saved compiles (nothing half-saved, nothing broken)."""
        path = self.path_for(parent_file, block)
        body = as_read_back(body)  # hashed and checked as the file will read: a lone \r ends a line there
        provenance = {**{k: v for k, v in provenance.items() if k not in (BODY_HASH, BUDGET_FAILED)},
                      BODY_HASH: body_hash(body)}
        text = checked_module_text(path, provenance, body, registry)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        return SavedModule(path, provenance, body.strip() + "\n", text)

    def accept(self, module: SavedModule, who: str, registry) -> SavedModule:
        """Record that a person approved the module's body as it is now (and cleared any budget failure)."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        provenance = {**{k: v for k, v in module.provenance.items() if k not in (BODY_HASH, BUDGET_FAILED)},
                      "accepted-by": f"{who} on {stamp}", BODY_HASH: body_hash(module.body)}
        text = checked_module_text(module.path, provenance, module.body, registry)
        write_atomic(module.path, text)
        return SavedModule(module.path, provenance, module.body.strip() + "\n", text)

    def mark_budget_failure(self, module: SavedModule, what: str) -> None:
        """Note in the module's header that a run of it went over a generated module's limits, so later runs
        refuse it instead of running it again with no model; the body (and its hash) stay as they are."""
        current = self.read(module.path)
        if current.body != module.body:
            return  # replaced or edited meanwhile: the note would be about another module
        provenance = {**{k: v for k, v in current.provenance.items() if k != BUDGET_FAILED},
                      BUDGET_FAILED: f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {what}"}
        lines = "".join(f"{HEADER}{key} = {_one_line(value)}\n" for key, value in provenance.items())
        write_atomic(module.path, lines + "\n" + current.body.strip() + "\n")

    def read(self, path: Path) -> SavedModule:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise StoreError(f"cannot read {path}: {err.strerror}") from None
        provenance, body = split_header(text, HEADER)
        return SavedModule(Path(path), provenance, body, text)

    def all(self) -> list[SavedModule]:
        return [self.read(p) for p in sorted(self.root.rglob("*.pipe"))] if self.root.is_dir() else []

    def find(self, spec_hash: str) -> SavedModule | None:
        """A saved module made for exactly this spec, if there is one."""
        for module in self.all():
            if module.spec_hash == spec_hash:
                return module
        return None


def body_hash(body: str) -> str:
    """`sha256:<hex>` of a module's body (surrounding blank space ignored), for the header's `body-hash`."""
    return "sha256:" + hashlib.sha256(body.strip().encode("utf-8")).hexdigest()


def split_header(text: str, prefix: str) -> tuple[dict[str, str], str]:
    """The `<prefix>key = value` lines at the top of a module as a dict, and the source after them."""
    fields: dict[str, str] = {}
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines) and lines[index].startswith(prefix):
        key, _, value = lines[index][len(prefix):].partition(" = ")
        fields[key.strip()] = value.rstrip("\n")
        index += 1
    return fields, "".join(lines[index:]).lstrip("\n")


def checked_module_text(path: Path, fields: dict[str, object], body: str, registry, header: str = HEADER) -> str:
    """The file a module is saved as (a `header` line per field, then the body), checked to compile as it
    stands; StoreError with the diagnostics if it does not."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.syntax.diagnostics import CompileError

    lines = "".join(f"{header}{key} = {_one_line(value)}\n" for key, value in fields.items())
    text = lines + "\n" + as_read_back(body).strip() + "\n"
    try:
        compile_source(text, str(path), registry)
    except CompileError as err:
        raise StoreError(f"refusing to save a module that does not compile:\n{err.render()}") from None
    return text


def as_read_back(text: str) -> str:
    """`text` as reading its file back gives it: Python's text mode ends a line at \r\n and at a lone \r too."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
