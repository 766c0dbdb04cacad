# tries: reach the host's server by name (localhost) and resolve a public name through DNS
# expect: contained
import socket
import urllib.request

try:
    urllib.request.urlopen("http://localhost:@PORT@/ESCAPED", timeout=1)
    print("ESCAPED fetched from localhost")
except OSError as exc:
    print("contained: localhost:", exc)
try:
    print("ESCAPED resolved", socket.getaddrinfo("pypi.org", 443))
except OSError as exc:
    print("contained: dns:", exc)
