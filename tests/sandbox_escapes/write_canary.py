# tries: overwrite a host file outside the scratch folder
# expect: contained
try:
    with open("@CANARY@", "w") as handle:
        handle.write("overwritten")
    print("ESCAPED wrote the canary")
except OSError as exc:
    print("contained:", exc)
