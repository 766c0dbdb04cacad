# tries: flood stdout with far more than the cap to exhaust the host's memory
# expect: truncated
import sys

chunk = "A" * 65536
for _ in range(4096):
    sys.stdout.write(chunk)
