# Rewrites CUDA kernel launches, name<<<config>>>(args);, into kiln_emu::launch calls (see
# cuda_emulation.h), and the one dynamic shared-memory declaration the kernels use.
# Usage: rewrite_launches.py SOURCE DESTINATION
import re, sys, pathlib
src, dst = sys.argv[1], sys.argv[2]
s = pathlib.Path(src).read_text()
pattern = re.compile(r'([A-Za-z_][\w:]*(?:<[^;{}<>]*>)?)\s*<<<(.*?)>>>\((.*?)\);', re.S)
count = 0
def repl(m):
    global count
    count += 1
    return '::kiln_emu::launch([&] { %s(%s); }, %s);' % (m.group(1), m.group(3), m.group(2))
s = pattern.sub(repl, s)
s = s.replace('extern __shared__ TopKItem items[];', 'TopKItem* items = static_cast<TopKItem*>(::kiln_emu::dynamicShared());')
pathlib.Path(dst).write_text(s)
print(src, count, file=sys.stderr)
