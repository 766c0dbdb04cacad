# tries: become root again inside the sandbox: setuid(0), then unshare() a new user namespace
# expect: contained
import ctypes
import os

try:
    os.setuid(0)
    print("ESCAPED setuid(0) worked")
except OSError as exc:
    print("contained: setuid:", exc)
CLONE_NEWUSER = 0x10000000
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(CLONE_NEWUSER) == 0:
    print("ESCAPED made a user namespace")
else:
    print("contained: unshare:", os.strerror(ctypes.get_errno()))
