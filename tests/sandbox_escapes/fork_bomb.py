# tries: a fork bomb that would exhaust the host's process table
# expect: any
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
