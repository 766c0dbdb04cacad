"""Run budgets (steps, wall seconds, skill calls, model tokens and cost), the tree-wide meter, and the error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

# Flags that raise each budget, for the hint in the error.
_FLAGS = {"steps": "--max-steps", "seconds": "--max-seconds", "skill_calls": "--max-skill-calls",
          "tokens": "--max-tokens", "cost": "--max-cost", "memory": "--max-memory"}
_UNITS = {"steps": "steps", "seconds": "seconds", "skill_calls": "skill calls", "tokens": "model tokens",
          "cost": "USD of model cost", "memory": "bytes for one value"}
_NAMES = {"memory": "memory"}  # what a budget is called where its unit does not say it


@dataclass(frozen=True)
class Budget:
    """Limits for one run tree (a run and every generated child under it); None means unlimited."""

    max_steps: int | None = 1_000_000_000
    max_seconds: float | None = None
    max_skill_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    max_memory: int | None = None  # bytes one value may take (vm/memory.py)


@dataclass
class BudgetExceeded(PipeRuntimeError):
    """A stop at a budget's limit; `budget` names which one ("steps", "seconds", "memory", ...)."""

    budget: str = ""
    limit: float | None = None

    def larger(self) -> str:
        """The flag and a value that lets the run go on (twice the limit: limits count what was spent already)."""
        return larger_limit(self.budget, self.limit) if self.budget in _FLAGS and self.limit else ""


def larger_limit(name: str, limit: float) -> str:
    """`--max-steps 2000` for a steps limit of 1000: the flag of budget `name` with twice `limit`, written as
    the flag takes it."""
    doubled = limit * 2
    if name == "memory":
        mib = 1 << 20
        value = f"{int(doubled) // mib}M" if doubled % mib == 0 else str(int(doubled))
    elif name in ("seconds", "cost"):
        value = f"{doubled:g}"
    else:
        value = str(int(doubled))
    return f"{_FLAGS[name]} {value}"


def budget_exceeded(name: str, limit: float, used: float, span: Span | None,
                    where: str | None = None) -> BudgetExceeded:
    """The error for an exceeded budget: which one, the limit, the count, and where."""
    unit = _UNITS[name]
    used_text = f"{used:.2f}" if isinstance(used, float) else str(used)
    limit_text = f"{limit:g}"
    if name == "memory":  # sizes in bytes read better whole and grouped
        limit_text, used_text = f"{limit:,}", f"{used:,}"
    where = where or (f"at {span}" if span else "")
    return BudgetExceeded(
        f"{_NAMES.get(name, unit)} budget exceeded: limit {limit_text} {unit}, used {used_text}; "
        f"stopped{' ' + where if where else ''}",
        kind="budget",
        span=span,
        hint=f"raise the limit, e.g. `{larger_limit(name, limit)}`"
             + (", or check the loop around this line" if name not in ("tokens", "cost") else ""),
        catchable=False,
        budget=name,
        limit=limit,
    )


class ModelSpend:
    """Model calls made inside skills (llm.*, an insight's review): checked against the run tree's budget
    before, charged after. What was charged since the last `take()` is the calling skill's, for its node."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.tokens = 0
        self.cost = 0.0

    def check(self, what: str) -> None:
        self.machine.meter.check_model(self.machine.budget, what)

    def charge(self, tokens: int, cost: float, what: str) -> None:
        self.tokens += tokens
        self.cost += cost
        self.machine.meter.charge_model(self.machine.budget, tokens, cost, what)

    def take(self) -> tuple[int, float]:
        spent = (self.tokens, self.cost)
        self.tokens, self.cost = 0, 0.0
        return spent

    def ended(self, model: str, input_tokens: int, output_tokens: int, cost: float, started: float,
              error: Exception | None) -> None:
        """One model call ended: the observers hear it with this spend, which the skill's `SkillCalled` carries."""
        if events.ModelCallEnded in self.machine.observer.hears:
            self.machine.observer.on(events.ModelCallEnded(spend=self, model=model, input_tokens=input_tokens,
                                                           output_tokens=output_tokens, cost=cost, started=started,
                                                           error=error))


class NodeSpend:
    """The decomposer's model calls for one ambiguous block: checked against and charged to the tree's meter,
    and reported to the run's observer for the block's org tree node."""

    def __init__(self, meter: TreeMeter, budget: Budget, observer, node: str, lock=None) -> None:
        self.meter, self.budget, self.observer, self.node = meter, budget, observer, node
        self.lock = lock  # the run tree's lock (vm.organization.TreeLock), let go of while a model answers

    def away(self, wait: Callable[[], Any]) -> Any:
        """`wait()` (a model call, or waiting for another block) with the run lock let go: other blocks and the
        run go on meanwhile."""
        if self.lock is None:
            return wait()
        with self.lock.released():
            return wait()

    def check(self, what: str) -> None:
        self.meter.check_model(self.budget, what)

    def charge(self, tokens: int, cost: float, what: str) -> None:
        if events.NodeAnnotated in self.observer.hears:
            self.observer.on(events.NodeAnnotated(node_id=self.node, tokens=tokens, cost=cost))
        self.meter.charge_model(self.budget, tokens, cost, what)

    def ended(self, model: str, input_tokens: int, output_tokens: int, cost: float, started: float,
              error: Exception | None) -> None:
        """One model call ended: the observers hear it for the block's node."""
        if events.ModelCallEnded in self.observer.hears:
            self.observer.on(events.ModelCallEnded(spend=self, model=model, input_tokens=input_tokens,
                                                   output_tokens=output_tokens, cost=cost, started=started,
                                                   error=error))


class TreeMeter:
    """What a run tree spent outside the counters of the machines running now.

    `data` holds model tokens and cost of the whole tree, and the steps and skill calls of generated
    children that have finished. The root machine's meter is its RunState.usage, so checkpoints keep it;
    every machine of the tree shares that one meter, so one budget holds for the whole tree."""

    FIELDS = ("tokens", "cost", "steps", "skill_calls")

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data = data if data is not None else {}
        for name in self.FIELDS:
            self.data.setdefault(name, 0.0 if name == "cost" else 0)

    @property
    def tokens(self) -> int:
        return self.data["tokens"]

    @property
    def cost(self) -> float:
        return self.data["cost"]

    @property
    def steps(self) -> int:
        return self.data["steps"]

    @property
    def skill_calls(self) -> int:
        return self.data["skill_calls"]

    def snapshot(self) -> dict[str, Any]:
        return dict(self.data)

    def since(self, before: dict[str, Any]) -> dict[str, Any]:
        """What was spent since `snapshot()` returned `before`."""
        return {name: self.data[name] - before.get(name, 0) for name in self.FIELDS}

    def add(self, spent: dict[str, Any]) -> None:
        for name in self.FIELDS:
            self.data[name] += spent.get(name, 0)

    def check_model(self, budget: Budget, what: str) -> None:
        """Before a model call: fail if the tree has already spent its tokens or cost."""
        if budget.max_tokens is not None and self.data["tokens"] >= budget.max_tokens:
            raise budget_exceeded("tokens", budget.max_tokens, self.data["tokens"], None, f"before {what}")
        if budget.max_cost is not None and self.data["cost"] >= budget.max_cost:
            raise budget_exceeded("cost", budget.max_cost, float(self.data["cost"]), None, f"before {what}")

    def charge_model(self, budget: Budget, tokens: int, cost: float, what: str) -> None:
        """After a model call: count it, and fail if that took the tree over a limit."""
        self.data["tokens"] += tokens
        self.data["cost"] += cost
        if budget.max_tokens is not None and self.data["tokens"] > budget.max_tokens:
            raise budget_exceeded("tokens", budget.max_tokens, self.data["tokens"], None, f"after {what}")
        if budget.max_cost is not None and self.data["cost"] > budget.max_cost:
            raise budget_exceeded("cost", budget.max_cost, float(self.data["cost"]), None, f"after {what}")


class BlockMeter(TreeMeter):
    """What one concurrently resolved ambiguous block (and its generated child) spends, kept apart from the tree's
    meter until the block's result is delivered, so that a checkpoint taken meanwhile never holds part of it.
    Budget checks see the tree's totals plus this block's."""

    def __init__(self, tree: TreeMeter) -> None:
        super().__init__()
        self.tree = tree

    @property
    def tokens(self) -> int:
        return self.tree.tokens + self.data["tokens"]

    @property
    def cost(self) -> float:
        return self.tree.cost + self.data["cost"]

    @property
    def steps(self) -> int:
        return self.tree.steps + self.data["steps"]

    @property
    def skill_calls(self) -> int:
        return self.tree.skill_calls + self.data["skill_calls"]

    def check_model(self, budget: Budget, what: str) -> None:
        self._total().check_model(budget, what)

    def charge_model(self, budget: Budget, tokens: int, cost: float, what: str) -> None:
        self.data["tokens"] += tokens
        self.data["cost"] += cost
        self._total().charge_model(budget, 0, 0.0, what)  # charges nothing more: checks the totals

    def _total(self) -> TreeMeter:
        return TreeMeter({name: self.tree.data[name] + self.data[name] for name in self.FIELDS})
