# tries: debug the sandbox's init (pid 1) and a process of its own: ptrace attach, seize and traceme, read and
# write its memory with process_vm_readv/writev, steal its file descriptors with pidfd_getfd
# expect: contained
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE = 0, 16, 0x4206
SYS_process_vm_readv, SYS_process_vm_writev, SYS_pidfd_open, SYS_pidfd_getfd = 310, 311, 434, 438
worked = []


class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


child = os.fork()
if child == 0:
    os.pause()
    os._exit(0)
for target in (1, child):
    for request in (PTRACE_ATTACH, PTRACE_SEIZE):
        if libc.ptrace(request, target, 0, 0) == 0:
            worked.append(f"ptrace {request} on {target}")
    buf = ctypes.create_string_buffer(64)
    local, remote = IOVec(ctypes.addressof(buf), 64), IOVec(0x400000, 64)
    for number in (SYS_process_vm_readv, SYS_process_vm_writev):
        if libc.syscall(number, target, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0:
            worked.append(f"process_vm syscall {number} on {target}")
    pidfd = libc.syscall(SYS_pidfd_open, target, 0)
    if pidfd >= 0 and libc.syscall(SYS_pidfd_getfd, pidfd, 0, 0) >= 0:
        worked.append(f"pidfd_getfd on {target}")
traceme = os.fork()
if traceme == 0:
    os._exit(0 if libc.ptrace(PTRACE_TRACEME, 0, 0, 0) == 0 else 1)
if os.waitpid(traceme, 0)[1] == 0:
    worked.append("PTRACE_TRACEME")
os.kill(child, 9)
print("ESCAPED", worked) if worked else print("contained: every debugging call failed with", os.strerror(1))
