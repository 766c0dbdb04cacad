# tries: leave a file in /tmp for the host to find (the sandbox's /tmp must be private)
# expect: any
with open("/tmp/PLANTED-tmp-file", "w") as handle:
    handle.write("left behind")
print("wrote /tmp/PLANTED-tmp-file inside the sandbox")
