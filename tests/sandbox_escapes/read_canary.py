# tries: read a file of the host outside the scratch folder by its absolute path
# expect: contained
try:
    print("ESCAPED", open("@CANARY@").read())
except OSError as exc:
    print("contained:", exc)
