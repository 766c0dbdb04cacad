"""What a run tells its observers (tracer, org tree, progress, checkpoints): events (vm/events.py) in, one `on`."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, ClassVar

from orgtree_lang.vm import events
from orgtree_lang.vm.events import Event

# Statements between two AtStatement events when nothing asks for more: the wall-clock budget is checked
# there too, so this also bounds how late a `--max-seconds` stop can come.
QUIET_INTERVAL = 4096


def hearing(kind: type[Event], *, unpacked: bool = False) -> Callable:
    """Marks an observer's method as its handler of events of `kind`: the method takes the event, or with
    `unpacked` the event's fields in their declared order (no event object is built where the machine sends
    the event through `receiver`: a pipeline call that builds and dispatches two events spends about 1 us on
    them, a third of the call, benchmarks/orgtree_overhead.py)."""

    def mark(method: Callable) -> Callable:
        if unpacked:
            _check_fields(method, kind)
        method.heard = kind
        method.unpacked = unpacked
        return method

    return mark


def _fields(kind: type[Event]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))


def _check_fields(method: Callable, kind: type[Event]) -> None:
    """The fields reach an unpacked handler by position: its parameters must be the event's fields, in order."""
    params = tuple(inspect.signature(method).parameters)[1:]
    if params != _fields(kind):
        raise TypeError(f"{method.__qualname__} hears {kind.__name__} unpacked, so its parameters after self must "
                        f"be that event's fields in order: ({', '.join(_fields(kind))}), not ({', '.join(params)})")


def _unpacking(method: Callable, kind: type[Event]) -> Callable:
    """An event-taking handler for `method`, which takes the event's fields."""
    names = _fields(kind)

    def handler(observer: RunObserver, event: Event) -> None:
        method(observer, *[getattr(event, name) for name in names])

    return handler


class RunObserver:
    """Hears what one machine does, as events (vm/events.py). This one hears nothing.

    An observer marks a method `@hearing(events.Kind)` for each kind it handles; `hears` is the set of those
    kinds, and `on(event)` calls the one for the event's kind. Code that reports an event builds it only when
    `type in observer.hears`, so an event nobody hears costs one set lookup and no object. The machine calls
    exactly one observer (a `FanOut` when there are several). `step_interval` is the most statements the
    machine may run between two AtStatement events (0: every statement)."""

    step_interval: int = QUIET_INTERVAL
    handlers: ClassVar[dict[type[Event], Callable]] = {}
    unpacked_handlers: ClassVar[dict[type[Event], Callable]] = {}  # those that take the event's fields
    hears: frozenset[type[Event]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found = dict(cls.handlers)
        unpacked = dict(getattr(cls, "unpacked_handlers", {}))
        for value in vars(cls).values():
            kind = getattr(value, "heard", None)
            if kind is not None:
                if getattr(value, "unpacked", False):
                    unpacked[kind] = value
                    found[kind] = _unpacking(value, kind)
                else:
                    unpacked.pop(kind, None)
                    found[kind] = value
        cls.handlers = found
        cls.unpacked_handlers = unpacked
        cls.hears = frozenset(found)

    def on(self, event: Event) -> None:
        """Hear `event` (events of a kind this observer does not hear are ignored)."""
        handler = self.handlers.get(type(event))
        if handler is not None:
            handler(self, event)

    def receiver(self, kind: type[Event]) -> Callable[..., None] | None:
        """What the machine calls with the fields of an event of `kind` (positionally, in declared order), or
        None when nothing hears it: the observer's unpacked handler itself when it has one, else a function
        that builds the event and hears it."""
        if kind not in self.hears:
            return None
        method = self.unpacked_handlers.get(kind)
        if method is not None and type(self).on is RunObserver.on:
            return method.__get__(self)
        on = self.on
        return lambda *values: on(kind(*values))


NO_OBSERVER = RunObserver()


class FanOut(RunObserver):
    """Several observers heard as one, in order; each event goes to those that hear its kind."""

    def __init__(self, observers: list[RunObserver]) -> None:
        self.observers = list(observers)
        self.step_interval = min(o.step_interval for o in self.observers)
        self.hears = frozenset().union(*(o.hears for o in self.observers))
        # Each kind's receivers, in order: an observer's own handler, bound (one call, no lookup, per event).
        self._by_kind = {kind: tuple(_receiver(o, kind) for o in self.observers if kind in o.hears)
                         for kind in self.hears}

    def on(self, event: Event) -> None:
        for receive in self._by_kind.get(type(event), ()):
            receive(event)

    def receiver(self, kind: type[Event]) -> Callable[..., None] | None:
        hearers = [o for o in self.observers if kind in o.hears]
        if len(hearers) == 1:  # one observer hears it: the event goes straight to that one
            return hearers[0].receiver(kind)
        return super().receiver(kind)


def _receiver(observer: RunObserver, kind: type[Event]) -> Callable[[Event], None]:
    """What hears events of `kind` for `observer`: its handler, bound, unless it has an `on` of its own."""
    if type(observer).on is not RunObserver.on:
        return observer.on
    return observer.handlers[kind].__get__(observer)


def observe(observers) -> RunObserver:
    """One observer for a list of them: the no-op one for none, the observer itself for one, else a fan-out."""
    present = [o for o in observers or () if o is not None]
    if not present:
        return NO_OBSERVER
    return present[0] if len(present) == 1 else FanOut(present)


class ProgressObserver(RunObserver):
    """Calls `report(state, span)` about once a second of wall-clock time (for `pipe run`'s progress line)."""

    def __init__(self, report, clock) -> None:
        self.report = report
        self.clock = clock
        self._last = 0.0

    @hearing(events.AtStatement)
    def at_statement(self, event: events.AtStatement) -> None:
        now = self.clock()
        if now - self._last >= 1.0:
            self._last = now
            frame = event.frame
            self.report(event.state, frame.code.span_at(frame.pc))
