"""The one family of errors orgtree_lang reports to a user: each renders itself and carries the exit code it means."""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_COMPILE = 65
EXIT_RUNTIME = 70
EXIT_IOERR = 74  # EX_IOERR: the machine could not write (a full disk); nothing is wrong with the program
EXIT_WAITING = 75  # EX_TEMPFAIL: nothing failed; the run waits for a person (`pipe reply`, then `pipe resume`)


class PipeError(Exception):
    """Base class for every error orgtree_lang reports to a user (never shown as a traceback).

    The message says what was expected and what was got, the hint how to fix it. Subclasses set `exit_code`
    (usage 2, compile 65, runtime 70) and override `render` when they have more to show (source lines, a
    .pipe call stack). Errors that are not for users stay outside the family: invariant checks of the
    compiler (AssertionError) and private control flow."""

    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message

    def render(self, command: str = "pipe", debug: bool = False) -> str:
        """`command: message`, the hint, and the notes added on the way up (`err.add_note`)."""
        lines = [f"{command}: {self.message}"]
        if self.hint:
            lines.append(f"  = hint: {self.hint}")
        lines.extend(getattr(self, "__notes__", ()))
        return "\n".join(lines)


class UsageError(PipeError):
    """The command line, an input value or a setting asks for something that cannot be: exit 2."""

    exit_code = EXIT_USAGE
