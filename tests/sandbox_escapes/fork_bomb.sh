# tries: the classic shell fork bomb
# expect: any
bomb() { bomb | bomb & }
bomb
sleep 5
