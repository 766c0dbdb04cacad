# tries: survive the timeout kill: ignore every catchable signal, clear the parent-death signal, become a
# child subreaper, double-fork into a new session, then keep writing to scratch and the host canary
# expect: timed_out
import ctypes
import os
import signal
import time

libc = ctypes.CDLL(None, use_errno=True)
for sig in range(1, 32):
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError):
            pass
libc.prctl(1, 0)  # PR_SET_PDEATHSIG: none
libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for i in range(400):
            time.sleep(0.05)
            try:
                open(f"/scratch/late-{i}.txt", "w").write("still alive")
                open("@CANARY@", "w").write("ESCAPED survivor")
            except OSError:
                pass
        os._exit(0)
    os._exit(0)
time.sleep(60)
