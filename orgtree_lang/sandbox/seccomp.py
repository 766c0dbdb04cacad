"""The seccomp filter bwrap installs before running sandboxed code: debugging, kernel-state and namespace calls fail
with EPERM, and sockets may be only of the families on an allow list."""

from __future__ import annotations

import errno
import os
import tempfile
from functools import lru_cache

from orgtree_lang.sandbox.settings import SandboxUnavailable

# Denied outright. Reasons by group: reading or steering other processes (ptrace and friends: the way out of the
# pid namespace's kill), kernel state shared with the host (keyrings, bpf, perf, module loading), blocking the
# kernel for other users (userfaultfd), changing what the file system looks like (mount family, chroot), memory
# held outside every per-process limit (memfd, SysV shared memory), and io_uring, whose operations bypass seccomp.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    "add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd", "lookup_dcookie",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig",
    "fspick", "mount_setattr", "unshare", "setns",
    "memfd_create", "memfd_secret", "shmget", "shmat", "shmctl", "shmdt",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "acct", "quotactl", "syslog", "name_to_handle_at", "open_by_handle_at", "iopl", "ioperm",
)
# Socket families, an allow list: AF_UNIX always (a program talks to its own children), AF_INET and AF_INET6 only
# when a network is granted (an install). Every other family is refused: vsock is not network-namespaced (on a VM
# it reaches the hypervisor), netlink, packet, bluetooth, AF_ALG and the rest reach kernel code for little use.
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
SOCKET_CALLS = ("socket", "socketpair")


def _refused_families(network: bool) -> list[tuple[str, int]]:
    """The (comparison, value) pairs that together cover every 64-bit family argument but the allowed ones (a rule
    compares an argument once, so "not in {1, 2, 10}" is: 0, 3 to 9, and above 10; the kernel reads the argument
    as an int, so values above 32 bits, which it would truncate, are refused whole)."""
    if not network:
        return [("NE", AF_UNIX)]
    return [("EQ", 0), *(("EQ", family) for family in range(3, AF_INET6)), ("GT", AF_INET6)]


# clone's namespace flags (CLONE_NEWTIME shares its bit with the exit signal in clone's flags and is refused
# through unshare and clone3 instead).
CLONE_NAMESPACES = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
                    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                    "CLONE_NEWNET": 0x40000000}


def filter_fd(network: bool = False) -> int:
    """A readable file descriptor holding the compiled filter, for bwrap's `--seccomp FD`; the caller closes it."""
    program = compiled_filter(network)
    read_end, write_end = os.pipe()
    try:
        # The program is a few hundred bytes, far below a pipe's buffer, so the write cannot block.
        os.write(write_end, program)
    finally:
        os.close(write_end)
    return read_end


@lru_cache(maxsize=2)
def compiled_filter(network: bool = False) -> bytes:
    """The filter as classic BPF for the machine's native architecture (other architectures' calls are killed);
    `network` allows AF_INET and AF_INET6 sockets too."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError) as exc:  # pyseccomp raises RuntimeError when libseccomp.so is missing
        raise SandboxUnavailable(
            f"code.run refuses to run the code: the seccomp filter cannot be built ({exc})",
            hint="install libseccomp (`apt-get install -y libseccomp2`) and the Python package pyseccomp; "
                 "code is never run without the filter",
        ) from None
    flt = sc.SyscallFilter(sc.ALLOW)
    refuse = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            flt.add_rule(refuse, name)
        except (OSError, ValueError):  # a call this kernel and libseccomp do not know cannot be made either
            continue
    for call in SOCKET_CALLS:
        for comparison, value in _refused_families(network):
            flt.add_rule(refuse, call, sc.Arg(0, getattr(sc, comparison), value))
    for bit in CLONE_NAMESPACES.values():
        flt.add_rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, bit, bit))
    # clone3 passes its flags in memory, where seccomp cannot look: ENOSYS makes libc fall back to clone.
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    # personality(2) may only be queried (0xffffffff) or set to plain Linux (0); other personalities change the
    # address-space layout (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC). A rule may compare an argument only once, so
    # "the low 32 bits are neither all 0 nor all 1" is spelled as "some bit differs from bit 0".
    for bit in range(1, 32):
        pair = 1 | 1 << bit
        flt.add_rule(refuse, "personality", sc.Arg(0, sc.MASKED_EQ, pair, 1))
        flt.add_rule(refuse, "personality", sc.Arg(0, sc.MASKED_EQ, pair, 1 << bit))
    with tempfile.TemporaryFile() as sink:
        flt.export_bpf(sink)
        sink.seek(0)
        return sink.read()
