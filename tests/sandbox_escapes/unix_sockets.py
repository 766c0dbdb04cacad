# tries: talk to host daemons over unix sockets (docker, dbus, systemd)
# expect: contained
import socket

for path in ("/var/run/docker.sock", "/run/docker.sock", "/run/dbus/system_bus_socket", "/run/systemd/private"):
    try:
        socket.socket(socket.AF_UNIX).connect(path)
        print("ESCAPED connected to", path)
    except OSError as exc:
        print("contained:", path, exc.strerror)
