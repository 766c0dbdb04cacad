# tries: symlinks from scratch to host files, read through them, and leave them for the host to follow
# expect: contained
import os

os.symlink("@CANARY@", "canary-link.txt")
os.symlink("/etc/shadow", "shadow-link.txt")
os.symlink("../../../../../../@CANARY@", "climb-link.txt")
for name in ("canary-link.txt", "shadow-link.txt", "climb-link.txt"):
    try:
        print("ESCAPED", open(name).read())
    except OSError as exc:
        print("contained:", name, exc.strerror)
