# tries: create files at the root of the file system and in /etc
# expect: contained
import os

for path in ("/PLANTED-root-file", "/etc/PLANTED-etc-file", "/program/PLANTED-program-file"):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        print("ESCAPED wrote", path)
    except OSError as exc:
        print("contained:", path, exc.strerror)
