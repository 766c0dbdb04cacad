# tries: daemonize (double fork + setsid) so a child outlives the run and later writes to the host
# expect: any
import os
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(100):
            time.sleep(0.1)
            try:
                open("@CANARY@", "w").write("overwritten by a daemon")
            except OSError:
                pass
        os._exit(0)
    os._exit(0)
print("parent leaves its daemon behind")
