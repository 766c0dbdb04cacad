# tries: open raw disks, kernel memory and sysfs knobs of the host
# expect: contained
import glob

hits = []
for path in ("/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem", "/dev/kmsg", "/sys/kernel/mm/transparent_hugepage/enabled"):
    try:
        open(path, "rb").read(1)
        hits.append(path)
    except OSError:
        pass
print("ESCAPED", hits) if hits else print("contained: devices", sorted(glob.glob("/dev/*")))
