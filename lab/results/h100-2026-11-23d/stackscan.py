# Crude user-space stacks of a stuck process without gdb: for each thread, the pc from
# /proc/PID/task/TID/syscall and the words on its stack that point into executable
# mappings (return addresses, with false positives), as "lib+offset".
import sys, os
pid = sys.argv[1]
maps = []
for l in open(f"/proc/{pid}/maps"):
    f = l.split()
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    if "x" in f[1] and len(f) >= 6:
        maps.append((lo, hi, int(f[2], 16), f[5]))
def sym(a):
    for lo, hi, off, name in maps:
        if lo <= a < hi:
            return f"{os.path.basename(name)}+{a - lo + off:#x}"
    return None
mem = open(f"/proc/{pid}/mem", "rb")
for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
    comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
    sc = open(f"/proc/{pid}/task/{tid}/syscall").read().split()
    print(f"-- thread {tid} {comm}: syscall {sc[0]}")
    if len(sc) < 3:
        continue
    sp, pc = int(sc[-2], 16), int(sc[-1], 16)
    print(f"   pc {sym(pc)}")
    data = b""
    for page in range(8):
        try:
            mem.seek(sp + len(data))
            data += mem.read(4096 - (sp + len(data)) % 4096)
        except OSError:
            break
    n = 0
    for i in range(0, len(data) - 7, 8):
        s = sym(int.from_bytes(data[i:i+8], "little"))
        if s and n < 40:
            print(f"   sp+{i:#x} {s}"); n += 1
