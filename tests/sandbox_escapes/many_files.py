# tries: open file descriptors until the host's table is exhausted
# expect: contained
handles = []
try:
    for i in range(100000):
        handles.append(open("/dev/null"))
    print("ESCAPED opened", len(handles))
except OSError as exc:
    print("contained after", len(handles), exc.strerror)
