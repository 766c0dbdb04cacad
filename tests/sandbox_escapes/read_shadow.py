# tries: read /etc/shadow, the host's password hashes
# expect: contained
try:
    print("ESCAPED", open("/etc/shadow").read())
except OSError as exc:
    print("contained:", exc)
