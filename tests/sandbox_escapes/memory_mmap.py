# tries: map and touch 8 GiB of anonymous memory in one go
# expect: nonzero
import mmap

area = mmap.mmap(-1, 8 << 30)
for offset in range(0, len(area), 4096):
    area[offset] = 1
print("ESCAPED mapped 8 GiB")
