# tries: hard-link a host file into scratch (the host file must not be visible, so the link fails)
# expect: contained
import os

for target in ("@CANARY@", "/etc/shadow", "/usr/bin/python3"):
    try:
        os.link(target, "hard-" + os.path.basename(target))
        print("ESCAPED linked" if target != "/usr/bin/python3" else "contained: linked a read-only file", target)
    except OSError as exc:
        print("contained:", target, exc.strerror)
