#!/usr/bin/env python3
"""Import circles: the module graph of each Rust crate and of the Python package, and its
strongly connected components of more than one module (Tarjan's algorithm).

An edge A -> B means module A names an item of module B:
- Rust (one node per source file, tests excluded): `crate::`, `super::` and `self::` paths
  in `use` items and in code, and paths through a child module (`child::Item`); a name that
  the target re-exports (`pub use other::Item`) counts as an edge to where it is defined.
  Declaring a child (`mod child;`) is not an edge.
- Python (one node per module of python/l4slab): `from .x import`, `from . import x`,
  `import l4slab.x`, `from l4slab.x import`, `from l4slab import name` (a re-exported name
  counts as an edge to its defining module), also inside functions (a lazy import still ties
  the two modules together). A package's `__init__` importing names of its own submodules
  at top level only to re-export them is its face, not an edge.

Usage: python3 tools/import_cycles.py [--root DIR] [--edges]
Prints each circle with the edges that close it and the total count; exits 0.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

Graph = dict[str, dict[str, set[str]]]  # node -> target -> names that make the edge
Mod = tuple[str, ...]  # a Rust module path below the crate root


# ---------------------------------------------------------------------------- Rust
def _strip_rust(src: str) -> str:
    """Source without comments, string/char literals and `#[cfg(test)]` items."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and not _ident_before(src, i):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            out.append("' '")
            i += len(m.group(0)) if m else 1
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    # Drop `#[cfg(test)]` items: an inline module/fn body or a `mod x;` declaration.
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*", text)
        if not m:
            return text
        j = m.end()
        semi, brace = text.find(";", j), text.find("{", j)
        if brace < 0 or (0 <= semi < brace):
            text = text[:m.start()] + text[semi + 1:]
            continue
        depth, k = 0, brace
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        text = text[:m.start()] + text[k + 1:]


def _ident_before(src: str, i: int) -> bool:
    return i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")


def _expand_use(tree: str) -> list[str]:
    """`a::{b::C, d}` -> ["a::b::C", "a::d"] (nested groups; `self` in a group is the prefix)."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as\w+$", "", tree)] if tree else []
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    res = []
    for p in parts:
        if p == "self":
            res.append(prefix.rstrip(":"))
        elif p:
            res.extend(prefix + q for q in _expand_use(p))
    return res


#: A path in code: `crate::a::B`, `super::x`, `child::Item`.
CODE_PATH = re.compile(r"(?<![\w:])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:\s*::\s*\w+)+)")


class RustCrate:
    """The module tree of one crate's src/ and the edges between its files."""

    def __init__(self, src: Path):
        self.src = src
        self.modules: dict[tuple[str, ...], Path] = {}
        self.text: dict[tuple[str, ...], str] = {}
        roots = [p for p in (src / "lib.rs", src / "main.rs") if p.exists()]
        for root in roots:
            base = () if root.name == "lib.rs" else ("<main>",)
            self._load(base, root)

    def _load(self, path: tuple[str, ...], file: Path) -> None:
        if path in self.modules:
            return
        raw = file.read_text()
        text = _strip_rust(raw)
        self.modules[path] = file
        self.text[path] = text
        here = file.parent if file.name in ("lib.rs", "main.rs", "mod.rs") else file.with_suffix("")
        for m in re.finditer(r"(?:^|[;}\s])mod\s+(\w+)\s*;", text):
            name = m.group(1)
            for cand in (here / f"{name}.rs", here / name / "mod.rs"):
                if cand.exists():
                    self._load(path + (name,), cand)
                    break

    def name(self, path: tuple[str, ...]) -> str:
        return str(self.modules[path].relative_to(self.src))

    def _reexports(self, mod: tuple[str, ...]) -> dict[str, list[str]]:
        res = {}
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", self.text[mod]):
            for full in _expand_use(m.group(1)):
                segs = [s for s in full.split("::") if s]
                if segs and segs[-1] != "*":
                    res[segs[-1]] = segs
        return res

    def _resolve(self, mod: Mod, segs: list[str], depth: int = 0) -> Mod | None:
        """The module a path names an item of, starting from `mod` (after crate/super/self)."""
        cur = mod
        i = 0
        while i < len(segs) and cur + (segs[i],) in self.modules:
            cur = cur + (segs[i],)
            i += 1
        if i < len(segs) and depth < 8:
            target = self._reexports(cur).get(segs[i])
            if target is not None:
                res = self._start(cur, target, depth + 1)
                if res is not None:
                    return res
        return cur

    def _start(self, mod: Mod, segs: list[str], depth: int = 0) -> Mod | None:
        """Resolve a path as written inside `mod`."""
        if not segs:
            return None
        if segs[0] == "crate":
            base = () if mod[:1] != ("<main>",) else ("<main>",)
            return self._resolve(base, segs[1:], depth)
        if segs[0] in ("super", "self"):
            cur = mod
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    cur = cur[:-1]
                segs = segs[1:]
            return self._resolve(cur, segs, depth)
        if mod + (segs[0],) in self.modules:
            return self._resolve(mod, segs, depth)
        return None

    def edges(self) -> Graph:
        g: Graph = {self.name(m): {} for m in self.modules}
        for mod, text in self.text.items():
            paths = []
            code = re.sub(r"\buse\s+[^;]+;", ";", text)
            words = set(re.findall(r"\w+", code))
            for m in re.finditer(r"(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", text):
                # `pub use child::Item` that the module does not use itself is its face, not
                # an import: whoever names the item through it gets the edge to where it is
                # defined.
                for full in _expand_use(m.group(2)):
                    if not m.group(1) or full.rsplit("::", 1)[-1] in words:
                        paths.append(full)
            # Paths in code: crate::a::B, super::x, child::Item.
            for m in CODE_PATH.finditer(code):
                paths.append(re.sub(r"\s+", "", m.group(1)))
            for p in paths:
                segs = [s for s in p.split("::") if s]
                target = self._start(mod, segs)
                if target is None or target == mod:
                    continue
                # A parent naming its own child module only to declare or re-export it is the
                # tree, not an import; a child naming a parent's item is an import.
                item = segs[-1]
                g[self.name(mod)].setdefault(self.name(target), set()).add(item)
        return g


# -------------------------------------------------------------------------- Python
def _defined_names(tree: ast.Module) -> set[str]:
    """Names a module's top level defines itself (functions, classes, assignments)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


class PyPackage:
    """The modules of a Python package and the imports between them."""

    def __init__(self, root: Path, package: str):
        self.root = root
        self.package = package
        self.modules: dict[str, Path] = {}
        for f in sorted(root.rglob("*.py")):
            rel = f.relative_to(root.parent).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            self.modules[".".join(parts)] = f
        self.trees = {m: ast.parse(f.read_text()) for m, f in self.modules.items()}

    def _abs(self, mod: str, level: int, name: str | None) -> str:
        if level == 0:
            return name or ""
        is_pkg = self.modules[mod].name == "__init__.py"
        parts = mod.split(".")
        base = parts if is_pkg else parts[:-1]
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    def _defining(self, pkg: str, name: str, depth: int = 0) -> str | None:
        """Where `from pkg import name` finds `name`: a submodule, what pkg re-exports (None
        when that is outside the package, e.g. the compiled `_core`), or pkg itself."""
        if f"{pkg}.{name}" in self.modules:
            return f"{pkg}.{name}"
        tree = self.trees.get(pkg)
        if tree is None or depth >= 8:
            return pkg
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                src = self._abs(pkg, node.level, node.module)
                for a in node.names:
                    if (a.asname or a.name) != name:
                        continue
                    if src not in self.modules:
                        return None
                    if self.modules[src].name == "__init__.py":
                        return self._defining(src, a.name, depth + 1)
                    return src
        return pkg if name in _defined_names(tree) else None

    def edges(self) -> Graph:
        g: Graph = {m: {} for m in self.modules}
        # Names a module's own code reads (an `__init__` that uses what it imports is more
        # than a face).
        used = {m: {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
                for m, t in self.trees.items()}
        for mod, tree in self.trees.items():
            for node in ast.walk(tree):
                targets: list[tuple[str | None, str]] = []
                if isinstance(node, ast.Import):
                    targets = [(a.name, a.name) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    src = self._abs(mod, node.level, node.module)
                    for a in node.names:
                        if src in self.modules and self.modules[src].name == "__init__.py":
                            targets.append((self._defining(src, a.name), a.name))
                        else:
                            targets.append((src, a.name))
                # A package's `__init__` importing its own submodules is the package's face
                # (as `pub use` in Rust): whoever imports a name through it gets the edge.
                face = self.modules[mod].name == "__init__.py" and node in tree.body
                for t, item in targets:
                    if t is None or t not in self.modules or t == mod:
                        continue  # outside the package (e.g. the compiled `_core`), or itself
                    if face and t.startswith(mod + ".") and item not in used[mod]:
                        continue
                    g[mod].setdefault(t, set()).add(item)
        return g


# ------------------------------------------------------------------------ circles
def circles(g: Graph) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on, stack, res = set(), [], []
    counter = 0
    for start in sorted(g):
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in g:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        res.append(sorted(comp))
    return sorted(res, key=lambda c: (-len(c), c))


def graphs(root: Path) -> dict[str, Graph]:
    """The module graph of each crate under `root`/crates and of `root`/python/l4slab."""
    res = {}
    for crate in sorted((root / "crates").iterdir()):
        if (crate / "src").is_dir():
            res[crate.name] = RustCrate(crate / "src").edges()
    pkg = root / "python" / "l4slab"
    if pkg.is_dir():
        res["python l4slab"] = PyPackage(pkg, "l4slab").edges()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--edges", action="store_true",
                    help="print every edge inside each circle with the names that make it")
    args = ap.parse_args()
    total = 0
    for unit, g in graphs(args.root).items():
        for comp in circles(g):
            total += 1
            print(f"{unit}: {len(comp)} modules: {', '.join(comp)}")
            if args.edges:
                members = set(comp)
                for a in comp:
                    for b in sorted(g[a]):
                        if b in members:
                            print(f"    {a} -> {b}  ({', '.join(sorted(g[a][b]))})")
    print(f"{total} circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
