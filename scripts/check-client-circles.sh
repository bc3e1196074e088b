#!/bin/sh
# Circles among client/'s files, found from what each source file calls and includes.
#
# A file depends on another when it includes that file's header or calls a function the
# other defines (not static; ctags lists the definitions).  A module is a source with its
# header (api/mem.c with api/mem.h).  Prints every circle of modules with the edges that
# close it, and the dependencies between client/'s folders.  Fails (exit 1) on a circle
# that crosses folders, which is a circle between the folders themselves, and on a circle
# inside a folder unless --allow-inside FOLDER names it.  Exit 77 (skipped) without ctags.
#
# Usage: check-client-circles.sh [--allow-inside FOLDER]... [CLIENT_DIR]
set -eu
command -v ctags >/dev/null || { echo "check-client-circles: ctags is needed" >&2; exit 77; }
dir=$(dirname "$0")/../client
allow=""
while [ $# -gt 0 ]; do
    case $1 in
    --allow-inside) allow="$allow $2"; shift 2 ;;
    *) dir=$1; shift ;;
    esac
done
exec python3 - "$dir" $allow <<'PY'
import os, re, subprocess, sys

root, allowed = sys.argv[1], set(sys.argv[2:])
paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
               if f.endswith(('.c', '.h')))
def module(p):
    return os.path.relpath(os.path.splitext(p)[0], root)
def folder(m):
    return os.path.dirname(m) or '.'

defined = {}
tags = subprocess.run(['ctags', '-x', '--kinds-C=f'] + [p for p in paths if p.endswith('.c')],
                      capture_output=True, text=True, check=True).stdout
for line in tags.splitlines():
    name, _, _, path, text = line.split(None, 4)
    if not re.search(r'\bstatic\b', text.split(name, 1)[0]):
        defined.setdefault(name, set()).add(module(path))

noise = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
include = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
headers = {os.path.basename(p): module(p) for p in paths if p.endswith('.h')}
edges = {}
for p in paths:
    text, m = open(p).read(), module(p)
    out = edges.setdefault(m, {})
    for h in include.findall(text):
        t = headers.get(os.path.basename(h))
        if t is not None and t != m:
            out.setdefault(t, '#include "%s"' % os.path.basename(h))
    if p.endswith('.c'):
        for word in sorted(set(re.findall(r'\b[A-Za-z_]\w*\b', noise.sub(' ', text)))):
            for t in defined.get(word, ()):
                if t != m:
                    out.setdefault(t, word + '()')

# Tarjan's strongly connected components, without recursion.
index, low, stack, on, circles = {}, {}, [], set(), []
for start in sorted(edges):
    if start in index:
        continue
    work = [(start, iter(sorted(edges[start])))]
    index[start] = low[start] = len(index)
    stack.append(start); on.add(start)
    while work:
        v, it = work[-1]
        w = next(it, None)
        if w is not None:
            if w not in index:
                index[w] = low[w] = len(index)
                stack.append(w); on.add(w)
                work.append((w, iter(sorted(edges.get(w, {})))))
            elif w in on:
                low[v] = min(low[v], index[w])
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[v])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop(); on.discard(w); c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                circles.append(sorted(c))

failed = 0
for c in sorted(circles):
    folders = sorted({folder(m) for m in c})
    where = 'across ' + ', '.join(folders) if len(folders) > 1 else 'inside ' + folders[0]
    ok = len(folders) == 1 and folders[0] in allowed
    failed += not ok
    print('%s circle of %d modules %s:' % ('allowed' if ok else 'FAIL', len(c), where))
    members = set(c)
    for a in c:
        for b, why in sorted(edges[a].items()):
            if b in members:
                print('    %s -> %s  (%s)' % (a, b, why))
links = sorted({(folder(a), folder(b)) for a in edges for b in edges[a] if folder(a) != folder(b)})
print('folders: ' + ('; '.join('%s -> %s' % l for l in links) or 'independent'))
print('%d circle(s), %d not allowed' % (len(circles), failed))
sys.exit(1 if failed else 0)
PY
