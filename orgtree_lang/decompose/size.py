"""Statements per pipeline of a generated module; a pipeline over the limit is sent back to be split."""

from __future__ import annotations

from orgtree_lang.syntax import nodes as n

MAX_STATEMENTS = 15  # `[decompose] max_statements`: more than this in one pipeline is sent back
AIM_STATEMENTS = 10  # what the author is asked for


SMALL_PIPELINES = f"""Keep each pipeline to about {AIM_STATEMENTS} statements (every statement counts, those inside
`if`, `for`, `while` and `try` too): give the rest to helper pipelines, or to nested `ambiguous` blocks for steps
that are large or unclear, each with a docstring that says exactly what it must do."""


def statement_counts(module: n.Module) -> dict[str, int]:
    """Each pipeline's number of statements, nested ones included (a nested `ambiguous` block is one)."""
    return {pipeline.name: sum(1 for body in pipeline.body for node in body.walk()
                               if isinstance(node, n.Stmt) and not isinstance(node, n.UseStmt))
            for pipeline in module.pipelines}


def size_problems(source: str, file: str, limit: int) -> list[str]:
    """The repair requests for pipelines of `source` longer than `limit` statements (none if it does not parse:
    the compiler's diagnostics say more)."""
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.syntax.parser import parse

    try:
        module = parse(source, file)
    except CompileError:
        return []
    long = {name: count for name, count in statement_counts(module).items() if count > limit}
    return [f"pipeline `{name}` has {count} statements, more than the {limit} a pipeline of a generated module "
            f"may have ([decompose] max_statements): split it into helper pipelines of about {AIM_STATEMENTS} "
            "statements each (or nested `ambiguous` blocks for whole steps) and call them from it"
            for name, count in long.items()]
