# tries: hold memory outside the per-process address-space limit: memfd, SysV shared memory, POSIX shared
# memory in /dev/shm, and files in /dev itself, 600 MB each (the run has 256 MiB)
# expect: contained
import ctypes
import mmap
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
SIZE, CHUNK = 600 << 20, b"x" * (1 << 20)
held = []
try:
    fd = os.memfd_create("fill")
    for _ in range(SIZE >> 20):
        os.write(fd, CHUNK)
    held.append("memfd")
except OSError as exc:
    print("memfd refused:", exc.strerror)
shmid = libc.shmget(0, SIZE, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
if shmid >= 0:
    address = libc.shmat(shmid, None, 0)
    if address not in (None, ctypes.c_void_p(-1).value):
        ctypes.memset(address, 1, SIZE)
        held.append("sysv shm")
else:
    print("shmget refused:", os.strerror(ctypes.get_errno()))
for folder in ("/dev/shm", "/dev", "/tmp"):
    written = 0
    try:  # files of 4 MiB, below the file-size limit, until 600 MB are held
        while written < SIZE:
            with open(f"{folder}/fill-{written >> 22}", "wb") as handle:
                for _ in range(4):
                    handle.write(CHUNK)
                    written += len(CHUNK)
    except OSError as exc:
        print(folder, "stopped after", written >> 20, "MiB:", exc.strerror)
    if written >= SIZE:
        held.append(folder)
print("ESCAPED holds", held) if held else print("contained: no 600 MB anywhere")
