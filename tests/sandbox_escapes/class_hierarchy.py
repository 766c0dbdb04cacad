# tries: class-hierarchy traversal from a literal to os.system (via os._wrap_close's globals), as restricted executors were escaped
# expect: contained
wrap_close = next(c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close")
system = wrap_close.__init__.__globals__["system"]
system("cat /etc/shadow @CANARY@ > stolen.txt 2>/dev/null; id -u > uid.txt")
stolen = open("stolen.txt").read()
print("ESCAPED", stolen) if stolen else print("contained: os.system ran as uid", open("uid.txt").read().strip())
