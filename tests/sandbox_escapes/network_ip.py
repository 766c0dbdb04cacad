# tries: connect by IP address to an HTTP server the host runs on 127.0.0.1
# expect: contained
import socket

try:
    socket.create_connection(("127.0.0.1", @PORT@), timeout=1).sendall(b"GET /ESCAPED HTTP/1.0\r\n\r\n")
    print("ESCAPED connected to the host's loopback")
except OSError as exc:
    print("contained:", exc)
