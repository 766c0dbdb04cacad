# tries: plant a program in the read-only system folder /usr/bin
# expect: contained
try:
    open("/usr/bin/PLANTED-planted", "w").write("#!/bin/sh\n")
    print("ESCAPED planted a file in /usr/bin")
except OSError as exc:
    print("contained:", exc)
