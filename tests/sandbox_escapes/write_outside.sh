# tries: write outside the scratch folder from the shell: the canary, /etc, /usr and the program's own folder
# expect: contained
for target in "@CANARY@" /etc/PLANTED-etc /usr/PLANTED-usr /program/PLANTED-program; do
    if echo overwritten > "$target" 2>/dev/null; then echo "ESCAPED wrote $target"; fi
done
echo "contained: every write outside scratch failed"
