# tries: while the host reads scratch back, keep swapping a scratch subfolder between a real folder and a link
# to the folder of a 0600 host file, from a daemon that ignores signals and outlives the program
# expect: any
import os
import signal
import time

folder = os.path.dirname("@CANARY@")
os.makedirs("out", exist_ok=True)
open("out/canary.txt", "w").write("decoy")
if os.fork() == 0:
    os.setsid()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    if os.fork() == 0:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.rename("out", "real")
                os.symlink(folder, "out")
                os.unlink("out")
                os.rename("real", "out")
            except OSError:
                pass
        os._exit(0)
    os._exit(0)
print("the swapper runs on")
