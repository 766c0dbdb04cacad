# tries: list and read the invoking user's home folder (/root, /home/*, and the host's $HOME)
# expect: contained
import glob
import os

found = [p for pattern in ("/root/*", "/root/.*", "/home/*/*") for p in glob.glob(pattern)]
if found:
    print("ESCAPED", found[:5])
elif os.environ.get("HOME") != "/scratch":
    print("ESCAPED host HOME", os.environ.get("HOME"))
else:
    print("contained: no home folder is visible")
