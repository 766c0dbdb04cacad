# tries: kill every process it can see and its parent, hoping to reach the host's processes
# expect: any
import os
import signal

print("parent is", os.getppid(), "visible pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
for pid in (os.getppid(), 1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as exc:
        print("contained:", pid, exc.strerror)
os.kill(-1, signal.SIGKILL)
