# tries: flood stderr forever
# expect: truncated
yes "flood flood flood flood flood flood flood" >&2
