# tries: open the memory of the sandbox's init (bwrap, pid 1) read-write through /proc/1/mem or /proc/1/task/1/mem, to change the process the host kills to end the run
# expect: contained
opened = []
for path in ("/proc/1/mem", "/proc/1/task/1/mem"):
    for mode in ("r+b", "rb", "wb"):
        try:
            with open(path, mode, buffering=0) as mem:
                opened.append(f"{path} {mode}")
        except OSError:
            pass
print("ESCAPED opened " + ", ".join(opened)) if opened else print("contained: the init's memory cannot be opened")
