# tries: call libc system() through ctypes to run shell commands that read and write host files
# expect: contained
import ctypes

libc = ctypes.CDLL(None)
libc.system(b"cat /etc/shadow @CANARY@ > stolen.txt 2>/dev/null; echo overwritten > @CANARY@ 2>/dev/null")
stolen = open("stolen.txt").read()
print("ESCAPED", stolen) if stolen else print("contained: system() ran inside the sandbox and found nothing")
