# tries: open sockets of families that namespaces do not isolate or that reach the kernel (vsock to the hypervisor, netlink, packet, bluetooth, kernel crypto, tipc, rds, can, xdp...), and ip sockets without a granted network
# expect: contained
import socket

families = {"AF_VSOCK": 40, "AF_NETLINK": 16, "AF_PACKET": 17, "AF_BLUETOOTH": 31, "AF_ALG": 38, "AF_TIPC": 30,
            "AF_RDS": 21, "AF_CAN": 29, "AF_XDP": 44, "AF_KEY": 15, "AF_APPLETALK": 5, "AF_X25": 9, "AF_INET": 2,
            "AF_INET6": 10, "AF_UNSPEC": 0, "AF_MAX+1": 46, "a wide number": 0x100000028, "minus one": -1}
opened = []
for name, family in families.items():
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
        try:
            # the raw system call: Python's socket module would check the family itself
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            fd = libc.syscall(41, ctypes.c_long(family), ctypes.c_long(kind), ctypes.c_long(0))  # socket(2), x86_64
            if fd >= 0:
                opened.append(f"{name}/{kind}")
            err = ctypes.get_errno()
        except OSError:
            continue
        pair = (ctypes.c_int * 2)()
        if libc.syscall(53, ctypes.c_long(family), ctypes.c_long(kind), ctypes.c_long(0), pair) == 0 and family != 1:
            opened.append(f"socketpair {name}/{kind}")
try:
    a, b = socket.socketpair(socket.AF_UNIX)  # unix sockets stay: programs talk to their own children
    a.sendall(b"x")
    assert b.recv(1) == b"x"
except OSError as exc:
    opened.append(f"AF_UNIX refused too: {exc}")
print("ESCAPED opened " + ", ".join(opened)) if opened else print("contained: only AF_UNIX sockets open")
