# tries: mount a file system or enter a new user namespace to regain root
# expect: contained
if mount -t tmpfs none /tmp 2>/dev/null; then echo ESCAPED mounted; fi
if unshare -r true 2>/dev/null; then echo ESCAPED unshared; fi
if chroot / true 2>/dev/null; then echo ESCAPED chrooted; fi
echo "contained: no privileges"
