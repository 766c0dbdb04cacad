# tries: allocate memory until the host runs out
# expect: nonzero
blocks = []
while True:
    blocks.append(bytearray(64 << 20))
