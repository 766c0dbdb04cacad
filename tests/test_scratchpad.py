"""The shared scratchpad: lock turns across threads and processes, dead holders recovered, the plan protocol."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from orgtree_lang.memory.lock import PadLock, PadLockTimeout
from orgtree_lang.memory.scratchpad import PadProtocolError, Scratchpad

# One writer process: N turns, each reads the newest seq under the lock and writes a note naming it.
WRITER = textwrap.dedent("""
    import sys
    from orgtree_lang.memory.scratchpad import Scratchpad
    root, agent, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    pad = Scratchpad.for_workspace(root)
    for i in range(count):
        with pad.turn(agent, timeout=120) as turn:
            turn.plan(f"{agent} note {i} after #{pad.last_seq()} [" + "x" * (i % 37) + "]")
""")

NOTE = re.compile(r"^(w\d) note (\d+) after #(\d+) \[(x*)\]$")


@pytest.fixture
def pad(root):
    with Scratchpad.for_workspace(root, on_recover=lambda r: None) as scratchpad:
        yield scratchpad


def test_eight_processes_write_1600_intact_notes_in_lock_order(root, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    writers = [subprocess.Popen([sys.executable, str(script), str(root), f"w{k}", "200"]) for k in range(8)]
    for writer in writers:
        assert writer.wait(timeout=240) == 0
    with Scratchpad.for_workspace(root) as pad:
        notes = pad.notes()
    assert len(notes) == 1600
    seen_per_agent: dict[str, list[int]] = {}
    for previous, note in zip([None, *notes], notes):
        match = NOTE.match(note.text)
        assert match, f"note #{note.seq} is not intact: {note.text!r}"
        agent, index, after, padding = match.groups()
        assert note.agent == agent and len(padding) == int(index) % 37
        # Each turn saw exactly the note before it: no two holders were ever inside the lock together.
        assert int(after) == (previous.seq if previous else 0)
        assert note.turn == (previous.turn + 1 if previous else 1)
        seen_per_agent.setdefault(agent, []).append(int(index))
    assert seen_per_agent == {f"w{k}": list(range(200)) for k in range(8)}


def test_threads_of_one_process_take_turns(pad):
    def write(agent):
        for i in range(25):
            with pad.turn(agent) as turn:
                before = pad.last_seq()
                time.sleep(0.0005)  # widen the window in which a second holder would slip in
                turn.plan(f"{agent} {i} after #{before}")

    threads = [threading.Thread(target=write, args=(f"t{k}",)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    notes = pad.notes()
    assert len(notes) == 100
    assert [int(n.text.rsplit("#", 1)[1]) for n in notes] == [0] + [n.seq for n in notes[:-1]]


def test_a_lock_held_by_a_killed_process_is_recovered_and_said(root, tmp_path):
    holder = tmp_path / "holder.py"
    holder.write_text(textwrap.dedent("""
        import sys, time
        from orgtree_lang.memory.scratchpad import Scratchpad
        pad = Scratchpad.for_workspace(sys.argv[1])
        with pad.turn("doomed") as turn:
            print("holding", flush=True)
            time.sleep(60)
            turn.plan("never written")
    """))
    process = subprocess.Popen([sys.executable, str(holder), str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "holding"
        with Scratchpad.for_workspace(root) as pad, pytest.raises(PadLockTimeout, match="doomed"):
            with pad.turn("impatient", timeout=0.2):
                pass  # pragma: no cover - the lock is busy
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    said = []
    with Scratchpad.for_workspace(root, on_recover=said.append) as pad:
        with pad.turn("survivor", timeout=5) as turn:
            turn.plan("carry on")
        notes = pad.notes()
    assert [n.kind for n in notes] == ["lock_recovered", "plan"]
    assert f"process {process.pid}" in notes[0].text and "doomed" in notes[0].text and "died" in notes[0].text
    assert len(said) == 1 and said[0].dead.pid == process.pid and said[0].dead.agent == "doomed"


def test_a_cleanly_released_lock_is_not_reported_as_recovered(pad):
    said = []
    pad.on_recover = said.append
    for agent in ("a", "b"):
        with pad.turn(agent) as turn:
            turn.plan(f"{agent} works")
    assert said == [] and [n.kind for n in pad.notes()] == ["plan", "plan"]


def test_a_turn_reads_what_others_wrote_since_its_agents_last_note(pad):
    pad.note("planner", "split the work in two")
    pad.note("coder", "write part one")
    pad.note("tester", "test part one")
    with pad.turn("planner") as turn:
        assert [n.agent for n in turn.recent()] == ["coder", "tester"]
        turn.plan("wait for part two")
    with pad.turn("planner") as turn:
        assert turn.recent() == []
        turn.plan("still waiting")


def test_a_changed_plan_records_before_why_and_now(pad):
    pad.note("coder", "write the parser by hand")
    _, unseen = pad.note("reviewer", "the grammar already exists in grammar/pipe.lark")
    assert [n.render() for n in unseen] == ["[#1 coder] plan: write the parser by hand"]
    note, unseen = pad.note("coder", "generate the parser from grammar/pipe.lark",
                            before="write the parser by hand", why="the reviewer found an existing grammar")
    assert [n.agent for n in unseen] == ["reviewer"]
    assert note.kind == "plan_changed"
    assert (note.before, note.why, note.now) == ("write the parser by hand", "the reviewer found an existing grammar",
                                                 "generate the parser from grammar/pipe.lark")
    assert note.text == ("plan changed. before: write the parser by hand / why: the reviewer found an existing "
                         "grammar / now: generate the parser from grammar/pipe.lark")
    assert pad.notes(agent="coder")[-1] == note


def test_a_changed_plan_may_not_know_how_to_go_on_yet(pad):
    with pad.turn("coder") as turn:
        note = turn.plan_changed("ship today", "the tests fail on CI")
    assert note.text.endswith("now: not decided yet") and note.now == ""


def test_a_turn_that_writes_nothing_breaks_the_protocol_and_releases_the_lock(pad):
    with pytest.raises(PadProtocolError, match="wrote neither its plan nor a plan-changed note"):
        with pad.turn("idle"):
            pass
    with pad.turn("next", timeout=1) as turn:  # the lock was released
        turn.plan("go")
    assert [n.agent for n in pad.notes()] == ["next"]


def test_a_turn_writes_one_note_only(pad):
    with pytest.raises(PadProtocolError, match="one turn writes one plan"):
        with pad.turn("chatty") as turn:
            turn.plan("one")
            turn.plan("two")
    assert [n.text for n in pad.notes()] == ["one"]


def test_half_a_plan_change_is_refused(pad):
    with pytest.raises(PadProtocolError, match="needs both `before`"):
        pad.note("coder", "new plan", before="old plan")
    with pytest.raises(PadProtocolError, match="before and why"):
        with pad.turn("coder") as turn:
            turn.plan_changed("", "because")
    assert pad.notes() == []


def test_an_error_inside_a_turn_releases_the_lock_and_writes_nothing(pad):
    with pytest.raises(ZeroDivisionError):
        with pad.turn("crashing"):
            1 / 0
    assert pad.notes() == [] and not PadLock(pad.lock_path).last_holder().pid


def test_turn_numbers_keep_growing_when_the_lock_file_is_deleted(pad):
    pad.note("a", "one")
    pad.lock_path.unlink()
    note, _ = pad.note("a", "two")
    assert note.turn == 2


def test_the_lock_times_out_naming_its_holder(root):
    first = PadLock(root / "x.lock")
    first.acquire("holder-agent")
    try:
        started = time.monotonic()
        with pytest.raises(PadLockTimeout, match="another thread"):
            PadLock(root / "x.lock").acquire("other", timeout=0.1)
        assert time.monotonic() - started < 5
    finally:
        first.release()


def test_a_note_under_a_used_idempotency_key_is_not_written_again(pad):
    first, _ = pad.note("coder", "write the lexer", key="run1:3")
    pad.note("tester", "test the lexer")
    again, unseen = pad.note("coder", "write the lexer", key="run1:3")
    assert again == first and unseen == []
    assert [n.agent for n in pad.notes()] == ["coder", "tester"]
