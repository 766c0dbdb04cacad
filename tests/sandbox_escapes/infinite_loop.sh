# tries: spin the CPU forever from the shell
# expect: timed_out
while :; do :; done
