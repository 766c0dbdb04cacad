# tries: read the host's password hashes and the host canary from the shell
# expect: contained
if cat /etc/shadow "@CANARY@" 2>/dev/null; then echo ESCAPED; else echo "contained: nothing readable"; fi
