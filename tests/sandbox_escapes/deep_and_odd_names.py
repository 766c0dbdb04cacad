# tries: crash the host while it reads scratch back: folders 5000 deep, names that are not UTF-8, control
# characters and 255-byte names, a folder it cannot read, and a fifo
# expect: any
import os

top = os.getcwd()
for _ in range(5000):
    os.mkdir("d")
    os.chdir("d")
open("bottom.txt", "w").write("deep")
os.chdir(top)
for name in (b"\xff\xfe-latin.txt", b"caf\xe9.txt", b"new\nline.txt", b"tab\there", b"\x1b[31mred", b"x" * 255):
    with open(name, "wb") as handle:
        handle.write(b"odd name")
os.mkdir(b"\xc3(folder")
open(b"\xc3(folder/inner\x80.txt", "wb").write(b"inner")
os.mkdir("locked")
open("locked/secret.txt", "w").write("locked")
os.chmod("locked", 0)
os.mkfifo("pipe")
print("planted")
