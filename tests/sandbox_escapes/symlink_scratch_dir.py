# tries: replace a scratch subfolder by a link to / so that files collected afterwards come from the host
# expect: any
import os

os.symlink("/", "rootlink")
os.symlink("/proc/self/root/etc", "etclink")
os.makedirs("out", exist_ok=True)
os.symlink("@CANARY@", "out/result.txt")
print("links planted")
