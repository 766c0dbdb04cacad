"""A full disk, for real: a run on a small tmpfs that fills up stops as the environment's fault (exit 74, "free
space, then `pipe resume RUN`"), is recorded as stopped, and finishes once space is freed, its replay exact.

The tmpfs is mounted in a mount namespace of its own (`unshare --user --map-root-user --mount`), so the test needs
no root and leaves no mount behind; where that cannot be done, it is skipped."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from durable_testing import cli_command, cli_env

# About 1.3 MB of workspace when it runs to the end: 150 files, their journal steps and trace events.
FILLING = '''use fs

pipeline main() -> int:
    total = 0
    for i in range(150):
        fs.write(f"out/{i}.txt", f"line {i} " * 100)
        total += len(fs.read(f"out/{i}.txt"))
    print("wrote all")
    return total
'''

# Runs inside the namespace: mount the tmpfs, fill it but for ROOM bytes, run, free the space, resume, replay.
DRIVER = '''
import json, os, subprocess, sys
from pathlib import Path

mount, pipe, room = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], check=True)
(mount / "fill.pipe").write_text(sys.stdin.read())
(mount / "hello.pipe").write_text("pipeline main() -> int:\\n    return 1\\n")
warm = subprocess.run(pipe + ["run", "hello.pipe"], cwd=mount, capture_output=True, text=True)  # makes state.db
assert warm.returncode == 0, warm.stderr
filler = mount / "filler"
with open(filler, "wb") as handle:
    handle.write(bytes(os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize - room))

def run(*args):
    done = subprocess.run(pipe + list(args), cwd=mount, capture_output=True, text=True, timeout=300)
    return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}

report = {"run": run("run", "fill.pipe", "--json")}
runs = [r for r in json.loads(run("runs", "--json")["out"]) if r["program"].endswith("fill.pipe")]
run_id = runs[0]["id"]
report["runs"], report["show"] = runs, run("show", run_id)
report["files"] = sorted(p.name for p in (mount / ".orgtree" / "runs" / run_id).iterdir())
filler.unlink()
report["resume"], report["replay"] = run("resume", run_id), run("replay", run_id)
report["written"] = len(list((mount / "out").iterdir()))
report["run_id"] = run_id
print(json.dumps(report))
'''


def in_own_mount_namespace(*command: str) -> list[str]:
    return ["unshare", "--user", "--map-root-user", "--mount", *command]


@pytest.fixture(scope="module")
def namespaces_work(tmp_path_factory) -> None:
    probe = tmp_path_factory.mktemp("probe")
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small tmpfs")
    tried = subprocess.run(in_own_mount_namespace("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)),
                           capture_output=True, text=True)
    if tried.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {tried.stderr.strip()}")


def test_a_run_that_fills_the_disk_stops_resumable_and_finishes_once_space_is_freed(tmp_path, namespaces_work):
    mount = tmp_path / "small-disk"
    mount.mkdir()
    driven = subprocess.run(
        in_own_mount_namespace(sys.executable, "-c", DRIVER, str(mount), json.dumps(cli_command()), str(300_000)),
        input=FILLING, capture_output=True, text=True, env=cli_env(), timeout=600)
    assert driven.returncode == 0, driven.stderr
    report = json.loads(driven.stdout)
    run_id, first = report["run_id"], report["run"]

    assert first["rc"] == 74, first["err"]
    assert "internal error" not in first["err"] and "this is a bug" not in first["err"]
    assert re.search(rf"^pipe run: no room to write: .+; run {run_id} is stopped", first["err"], re.M), first["err"]
    assert f"hint: free space, then `pipe resume {run_id}`" in first["err"]
    envelope = json.loads(first["out"])
    assert (envelope["status"], envelope["error"]["kind"]) == ("stopped", "disk")

    [listed] = report["runs"]
    assert listed["status"] == "stopped" and 0 < listed["steps"] < 600  # stopped part way, not crashed
    assert f"free space, then `pipe resume {run_id}`" in report["show"]["out"]
    assert ".disk-reserve" not in report["files"]  # the room kept for recording the stop was given back

    resumed = report["resume"]
    assert (resumed["rc"], resumed["out"]) == (0, "wrote all\n124000\n"), resumed["err"]
    assert report["written"] == 150
    replayed = report["replay"]
    assert replayed["rc"] == 0 and "identical to the original run" in replayed["err"] + replayed["out"], replayed
    assert not mount.exists() or not any(mount.iterdir())  # the tmpfs went with its namespace
