#!/usr/bin/env python3
"""Print the circles among the modules of some folders, and fail when a folder that must
be free of them has one.

A module is a source file and the header of the same name beside it (tenant.c,
tenant.h), or a header alone.  Module A depends on module B when A's object file uses a
symbol that B's object file defines (a call, or a table's reference), and with
--includes also when A includes B's header.  Symbols come from the objects of a build
(nm), not from the sources, so that calls made through token-pasting macros (the
backends' operation tables) count as the calls they are.
A circle is a set of two or more modules each of which depends, through the others, on
all of them: none of them can be understood, tested or moved without the rest.

usage: check-circles.py --build DIR [--must FOLDER]... [--report FOLDER]... [--why]
                        [--includes]
Folders are relative to the source tree and include their subfolders; --must folders
fail the check (exit 1) on a circle, --report folders are only printed.  --why prints
each dependency inside a circle, with the symbols it uses.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def objects(build):
    """{source path relative to ROOT: object path} for every C object of the build."""
    found = {}
    for top, _dirs, files in os.walk(build):
        for f in files:
            if not f.endswith('.c.o'):
                continue
            obj = os.path.join(top, f)
            parts = os.path.relpath(obj, build).split(os.sep)
            if 'CMakeFiles' not in parts:
                continue
            i = parts.index('CMakeFiles')
            if i + 2 >= len(parts) or not parts[i + 1].endswith('.dir'):
                continue
            # CMake names a source outside the target's folder with __ for each '..'.
            tail = ['..' if p == '__' else p for p in parts[i + 2:]]
            src = os.path.normpath(os.path.join(*parts[:i], *tail))[:-2]
            if os.path.isfile(os.path.join(ROOT, src)):
                found.setdefault(src, obj)
    return found


def symbols(obj):
    """(defined, used) global symbols of an object file."""
    out = subprocess.run(['nm', '-P', obj], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == 'U':
            used.add(name)
        elif kind in 'TDBRWVG':
            defined.add(name)
    return defined, used


def modules_under(folder):
    """{module name: [its files]} for the .c and .h files under folder."""
    mods = {}
    for top, _dirs, files in os.walk(os.path.join(ROOT, folder)):
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                path = os.path.relpath(os.path.join(top, f), ROOT)
                mods.setdefault(path[:-2], []).append(path)
    return mods


def includes(path):
    with open(os.path.join(ROOT, path), encoding='utf-8', errors='replace') as fh:
        return INCLUDE.findall(fh.read())


def graph(folder, objs, with_includes):
    """Dependencies among the modules under folder, and the sources that have no object."""
    mods = modules_under(folder)
    by_header = {}
    for mod in mods:
        by_header.setdefault(os.path.basename(mod) + '.h', []).append(mod)
    owner, used, missing = {}, {}, []
    for mod, files in mods.items():
        used[mod] = set()
        for f in files:
            if not f.endswith('.c'):
                continue
            if f not in objs:
                missing.append(f)
                continue
            d, u = symbols(objs[f])
            for s in d:
                owner[s] = mod
            used[mod] |= u
    deps = {mod: {} for mod in mods}
    for mod, files in mods.items():
        for f in files if with_includes else []:
            for inc in includes(f):
                near = os.path.normpath(os.path.join(os.path.dirname(f), inc))[:-2]
                cands = [near] if near in mods else by_header.get(os.path.basename(inc), [])
                for c in cands[:1]:
                    if c != mod:
                        deps[mod].setdefault(c, set()).add('#include "%s"' % inc)
        for s in used[mod]:
            if s in owner and owner[s] != mod:
                deps[mod].setdefault(owner[s], set()).add(s)
    return deps, missing


def circles(deps):
    """The strongly connected sets of two or more modules (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return sorted(out)


def check(folder, objs, must, args):
    deps, missing = graph(folder, objs, args.includes)
    found = circles(deps)
    word = 'must be acyclic' if must else 'report only'
    print(f'{folder} ({word}): {len(deps)} modules, {len(found)} circle(s)')
    for c in found:
        print(f'  circle of {len(c)}: ' + ' '.join(os.path.relpath(m, folder) for m in c))
        for a in c if args.why else []:
            for b in sorted(set(deps[a]) & set(c)):
                print(f'    {os.path.relpath(a, folder)} -> {os.path.relpath(b, folder)}: '
                      + ', '.join(sorted(deps[a][b])))
    for f in missing:
        print(f'  no object for {f}: build it first')
    return not (must and (found or missing))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', required=True, help='a build folder with the objects')
    ap.add_argument('--must', action='append', default=[], help='folder that fails on a circle')
    ap.add_argument('--report', action='append', default=[], help='folder only reported')
    ap.add_argument('--why', action='store_true', help='print the dependencies in circles')
    ap.add_argument('--includes', action='store_true', help='count includes as dependencies')
    args = ap.parse_args()
    objs = objects(os.path.abspath(args.build))
    ok = True
    for folder in args.must:
        ok &= check(folder.rstrip('/'), objs, True, args)
    for folder in args.report:
        check(folder.rstrip('/'), objs, False, args)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
