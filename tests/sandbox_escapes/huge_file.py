# tries: fill the disk with one enormous file in scratch
# expect: nonzero
with open("big.bin", "wb") as handle:
    for _ in range(1024):
        handle.write(b"\0" * (1 << 20))
print("ESCAPED wrote 1 GiB")
