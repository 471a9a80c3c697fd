#!/usr/bin/env python3
"""check-layers.py - the layer rules of docs/architecture.md, checked on the source text.

Usage: tools/check-layers.py [--root DIR] LAYER=USES,USES ... (the Makefile passes its LAYERS
and USES_; tools/test_check_layers.py shows each fault found in a tree made for it)

Fails (exit 1, one line per fault) when
  - a file includes a project header from a layer its layer may not use (above it, or a
    sibling it was not given);
  - libmicrohttpd (MHD_, microhttpd.h) appears outside gateway/, or libcurl (curl_, CURL,
    curl/curl.h) outside upstream/;
  - a function defined in one file is declared in a header of another folder;
  - files call each other in a circle: a.c calls a function defined in b.c and b.c one in
    a.c, directly or through others (strongly connected files of the call graph).

What it reads is text: calls are direct calls by name. A call through a pointer (the step
table, an up_handler, a relay_waiter, a store_done_fn, a cleanup) is the way a lower layer
hands work back up without knowing the caller, and is not counted. `make layers` links each
library against the ones below it, which catches what the text misses.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBLAYERS = {"gateway/admin": "gateway"}  # a folder inside a layer belongs to it
ONLY_IN = [  # (what, pattern, the one layer where it may appear)
    ("libmicrohttpd", re.compile(r"\bMHD_\w+|<microhttpd\.h>"), "gateway"),
    ("libcurl", re.compile(r"\bcurl_\w+|\bCURL\w*\b|<curl/curl\.h>"), "upstream"),
]
DEF_RE = re.compile(r"^(?!static\b)[A-Za-z_][\w \*]*?\b(\w+)\(([^;]*)$")
CALL_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')


def layer_of(path, layers):
    d = os.path.dirname(path)
    d = SUBLAYERS.get(d, d)
    return d if d in layers else None


def source_files(layers):
    out = []
    for top in sorted(set(layers) | set(SUBLAYERS)):
        folder = os.path.join(ROOT, top)
        for name in sorted(os.listdir(folder)):
            if name.endswith((".c", ".h")):
                out.append(os.path.join(top, name))
    return out


def code_of(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    return STRING_RE.sub('""', COMMENT_RE.sub(" ", text)), text


def check_includes(path, text, layers, faults):
    mine = layer_of(path, layers)
    for m in re.finditer(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
        target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
        theirs = layer_of(target, layers)
        if theirs is None:
            faults.append(f"{path}: includes {m.group(1)}, outside every layer")
        elif theirs != mine and theirs not in layers[mine]:
            faults.append(f"{path}: includes {target} ({theirs}/), which {mine}/ may not use")


def check_libraries(path, code, layers, faults):
    mine = layer_of(path, layers)
    for what, pattern, home in ONLY_IN:
        m = pattern.search(code)
        if m and mine != home:
            faults.append(f"{path}: {m.group(0)}: {what} is used only in {home}/")


def definitions(path, code):
    """Names of the functions path defines with external linkage."""
    names = set()
    lines = code.split("\n")
    for i, line in enumerate(lines):
        m = DEF_RE.match(line)
        if not m or line.startswith(("typedef", "return", "#")):
            continue
        rest = "\n".join(lines[i : i + 8])
        close = rest.find(")")
        if close >= 0 and rest[close + 1 :].lstrip().startswith("{"):
            names.add(m.group(1))
    return names


def check_declarations(defined, codes, faults):
    """A function is declared in a header of its own folder."""
    for path, names in defined.items():
        if not path.endswith(".c"):
            continue
        folder = os.path.dirname(path)
        for hpath, code in codes.items():
            if not hpath.endswith(".h") or os.path.dirname(hpath) == folder:
                continue
            for name in names:
                if re.search(r"\b%s\s*\(" % re.escape(name), code):
                    faults.append(f"{hpath}: declares {name}(), defined in {path}")


def call_graph(defined, codes):
    owner = {}
    for path, names in defined.items():
        for name in names:
            owner[name] = path
    graph = {p: set() for p in codes if p.endswith(".c")}
    for path in graph:
        for m in CALL_RE.finditer(codes[path]):
            callee = owner.get(m.group(1))
            if callee and callee != path:
                graph[path].add(callee)
    return graph


def circles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv):
    global ROOT
    if argv[:1] == ["--root"]:
        ROOT, argv = argv[1], argv[2:]
    layers = {}
    for arg in argv:
        name, _, uses = arg.partition("=")
        layers[name] = set(u for u in uses.split(",") if u)
    faults = []
    codes, defined = {}, {}
    for path in source_files(layers):
        code, text = code_of(path)
        codes[path] = code
        check_includes(path, text, layers, faults)
        check_libraries(path, code, layers, faults)
        if path.endswith(".c"):
            defined[path] = definitions(path, code)
    check_declarations(defined, codes, faults)
    for comp in circles(call_graph(defined, codes)):
        faults.append("files that call each other in a circle: " + " ".join(comp))
    for f in faults:
        print("layers: " + f)
    if faults:
        return 1
    print(f"layers: {len(codes)} files in {len(layers)} layers, every include and call points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
