"""The public compile API: source text or a file in, a checked Program (and warnings) out, cached by source hash."""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from orgtree_lang import __version__
from orgtree_lang.compile.code import FORMAT_VERSION, Program
from orgtree_lang.syntax.diagnostics import CompileError, Diagnostic


@dataclass
class Compiled:
    """A compiled program plus the warnings the checker reported for it."""

    program: Program
    warnings: list[Diagnostic]
    source: str
    cached: bool = False


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


# The packages whose code decides what bytecode a source becomes (the grammar is read from its package too).
_COMPILER_PACKAGES = ("orgtree_lang.grammar", "orgtree_lang.syntax", "orgtree_lang.check", "orgtree_lang.compile")


@functools.cache
def compiler_fingerprint() -> str:
    """A hash of the compiler itself: its format version, its grammar and its code. Bytecode made by another
    compiler (a cached program, the instruction positions in a run's checkpoint) is never taken for this one's:
    a checkout's version number stays the same while its code changes."""
    digest = hashlib.sha256(f"{FORMAT_VERSION}:{__version__}".encode())
    for package in _COMPILER_PACKAGES:
        files = [f for f in resources.files(package).iterdir() if f.name.endswith((".py", ".lark"))]
        for item in sorted(files, key=lambda f: f.name):
            digest.update(f"{package}/{item.name}\0".encode())
            digest.update(item.read_bytes())
    return digest.hexdigest()


def program_identity(program: Program) -> str:
    """Names a program's bytecode: its source and the compiler that made it. A run's checkpoints carry it, and
    a resume continues from one only under the same identity (its instruction positions mean nothing to another)."""
    return hashlib.sha256(f"{compiler_fingerprint()}:{program.source_hash}".encode()).hexdigest()


def cache_key(source: str, file: str, registry) -> str:
    """Everything that changes the bytecode: the compiler, the file name, the skills' signatures, the text."""
    parts = [compiler_fingerprint(), file, registry.fingerprint(), source]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def compile_source(source: str, file: str, registry, cache_dir: Path | None = None) -> Compiled:
    """Parse, check and compile `source`; raise CompileError with every diagnostic if it has errors."""
    key = cache_key(source, file, registry) if cache_dir is not None else None
    if key is not None:
        cached = _read_cache(cache_dir, key)
        if cached is not None:
            return Compiled(cached, [], source, cached=True)
    from orgtree_lang.check.module import check
    from orgtree_lang.compile.codegen import generate
    from orgtree_lang.syntax.parser import parse

    try:
        module = parse(source, file)
        checked = check(module, registry, source)
        program = generate(checked, source_hash(source))
    except RecursionError:
        # The parser bounds brackets and blocks; long chains of operators (`- - - x`) can still nest deeper.
        from orgtree_lang.syntax.spans import Span

        raise CompileError([Diagnostic("error", "this source nests expressions too deeply to compile",
                                       Span(file, 1, 1, 1, 1),
                                       "break long chains of operators into steps with names")],
                           {file: source}) from None
    warnings = [d for d in checked.diagnostics if d.severity == "warning"]
    if key is not None and not warnings and not _uses_lazy_skills(program, registry):
        _write_cache(cache_dir, key, program)
    return Compiled(program, warnings, source)


def _uses_lazy_skills(program: Program, registry) -> bool:
    """Whether the program may call skills of a lazily loaded namespace (an MCP server's tools): their signatures
    are not in the registry's fingerprint, so such a program is never cached (the server's tools may change)."""
    lazy = getattr(registry, "lazy_namespaces", None)
    if lazy is None:
        return False
    return any(use == ns or use.startswith(ns + ".") or ns.startswith(use + ".")
               for ns in lazy(loaded=True) for use in program.uses)


def compile_file(path: str | os.PathLike, registry, cache_dir: Path | None = None) -> Compiled:
    """Read and compile a .pipe file, naming it as given in diagnostics."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        from orgtree_lang.syntax.spans import Span

        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise CompileError([Diagnostic("error", f"cannot read {path}: {reason}", Span(str(path), 0, 0, 0, 0))]) from None
    return compile_source(source, str(path), registry, cache_dir)


def _read_cache(cache_dir: Path, key: str) -> Program | None:
    path = cache_dir / f"{key}.json"
    try:
        return Program.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(cache_dir: Path, key: str, program: Program) -> None:
    """Write atomically (temp file + rename) so a crash never leaves a torn cache entry."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(program.dumps())
        os.replace(tmp, cache_dir / f"{key}.json")
    except OSError:
        pass  # a cache that cannot be written only costs a recompile
