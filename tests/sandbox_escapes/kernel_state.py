# tries: reach kernel state shared with the host or change the sandbox's view of it: keyrings, bpf, perf events,
# userfaultfd, io_uring, mounts (old and new API), chroot, new namespaces by unshare, setns and clone, clone3,
# and a personality without address-space randomization
# expect: contained
import ctypes
import os
import struct

libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)  # a software cpu-clock counter of this process, user space only
struct.pack_into("IIQ", attr, 0, 1, 128, 0)
struct.pack_into("Q", attr, 40, 0x60)
calls = {  # x86_64 numbers: name -> (number, arguments)
    "add_key": (248, (b"user", b"orgtree", b"secret", 6, -2)),
    "request_key": (249, (b"user", b"orgtree", None, 0)),
    "keyctl get_keyring_id": (250, (0, -3, 0)),
    "bpf": (321, (0, 0, 0)),
    "perf_event_open": (298, (attr, 0, -1, -1, 0)),
    "userfaultfd": (323, (1,)),  # UFFD_USER_MODE_ONLY, allowed to unprivileged users
    "io_uring_setup": (425, (8, ctypes.create_string_buffer(120))),
    "mount": (165, (b"none", b"/tmp", b"tmpfs", 0, None)),
    "umount2 /proc": (166, (b"/proc", 2)),
    "pivot_root": (155, (b"/tmp", b"/tmp")),
    "chroot": (161, (b"/tmp",)),
    "fsopen": (430, (b"tmpfs", 0)),
    "open_tree": (428, (-100, b"/usr", 0x1)),
    "fspick": (433, (-100, b"/usr", 0)),
    "unshare user": (272, (0x10000000,)),
    "unshare mount": (272, (0x00020000,)),
    "setns": (308, (os.open("/proc/self/ns/user", os.O_RDONLY), 0)),
    "memfd_create": (319, (b"m", 0)),
    "personality ADDR_NO_RANDOMIZE": (135, (0x0040000,)),
}
worked = []
for name, (number, args) in calls.items():
    if libc.syscall(number, *args) >= 0:
        worked.append(name)
for flag, label in ((0x10000000, "user"), (0x20000000, "pid"), (0x40000000, "net"), (0x00020000, "mount")):
    pid = libc.syscall(56, 0x11 | flag, None, None, None, None)  # clone(SIGCHLD | flag)
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        worked.append(f"clone with a new {label} namespace")
if libc.syscall(435, None, 0) != -1 or ctypes.get_errno() != 38:  # clone3 must say ENOSYS
    worked.append("clone3 did not answer ENOSYS")
if libc.syscall(135, 0xFFFFFFFF) < 0:
    worked.append("even querying the personality failed")
print("ESCAPED", worked) if worked else print("contained: all refused")
