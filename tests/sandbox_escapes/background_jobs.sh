# tries: leave background jobs running after the script exits (nohup, setsid, disown)
# expect: any
nohup sleep 300 >/dev/null 2>&1 &
setsid sleep 301 >/dev/null 2>&1 &
(sleep 302 &) &
echo started three background sleepers
