# Rewrites CUDA kernel launches, name<<<config>>>(args);, into kiln_emu::launch calls (see
# cuda_emulation.h), and dynamic shared-memory declarations (extern __shared__ T name[];).
# Usage: rewrite_launches.py SOURCE DESTINATION
import re, sys, pathlib
src, dst = sys.argv[1], sys.argv[2]
s = pathlib.Path(src).read_text()
# Whitespace may separate the kernel's name from <<< (clang-format breaks long launches there).
pattern = re.compile(r'([A-Za-z_][\w:]*(?:<[^;{}<>]*>)?)\s*<<<(.*?)>>>\((.*?)\);', re.S)
count = 0
def repl(m):
    global count
    count += 1
    return '::kiln_emu::launch([&] { %s(%s); }, %s);' % (m.group(1), m.group(3), m.group(2))
s = pattern.sub(repl, s)
s = re.sub(r'extern __shared__ (\w+) (\w+)\[\];', r'\1* \2 = static_cast<\1*>(::kiln_emu::dynamicShared());', s)
pathlib.Path(dst).write_text(s)
print(src, count, file=sys.stderr)
