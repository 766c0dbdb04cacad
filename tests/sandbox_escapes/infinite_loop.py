# tries: spin the CPU forever
# expect: timed_out
while True:
    pass
