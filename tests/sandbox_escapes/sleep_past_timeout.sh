# tries: sleep far past the wall-clock timeout from the shell
# expect: timed_out
sleep 60
echo ESCAPED slept through
