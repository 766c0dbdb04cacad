# tries: reach the host over IPv6 loopback, and find any network interface besides loopback
# expect: contained
import socket

try:
    socket.create_connection(("::1", @PORT@), timeout=1)
    print("ESCAPED connected over ::1")
except OSError as exc:
    print("contained:", exc)
try:
    names = [name for _, name in socket.if_nameindex()]
except OSError as exc:  # listing interfaces needs a netlink or IP socket, which the filter refuses
    names = []
    print("contained: no interface list:", exc.strerror)
print("ESCAPED interfaces", names) if set(names) - {"lo"} else print("contained: interfaces", names)
