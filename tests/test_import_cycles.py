"""tools/import_cycles.py on small made-up trees: which edges it sees and which circles it
reports (strongly connected components of more than one module)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "tools" / "import_cycles.py")
assert _spec is not None and _spec.loader is not None
ic = importlib.util.module_from_spec(_spec)
sys.modules["import_cycles"] = ic
_spec.loader.exec_module(ic)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_rust_edges_follow_reexports_and_skip_the_module_tree_and_tests(tmp_path: Path) -> None:
    _write(tmp_path, {
        "crates/k/src/lib.rs": "".join(f"pub mod {m};\n" for m in "abcef") + "pub use a::A;\n",
        # a -> b through a `use` group; b -> a through the crate root's re-export of A.
        "crates/k/src/a.rs": "use crate::{b::{B, other}, c};\npub struct A;\n",
        "crates/k/src/b.rs": "pub struct B;\npub fn f() -> crate::A { crate::A }\n",
        # c declares and re-exports its child d, and d uses c's item: the tree, no edge c -> d.
        "crates/k/src/c/mod.rs": "pub mod d;\npub use d::D;\npub struct C;\n",
        "crates/k/src/c/d.rs": "use super::C;\npub struct D(C);\n",
        # A re-export the module itself uses is an import as well.
        "crates/k/src/f.rs": "pub use crate::b::B;\npub fn g(_: B) {}\n",
        # Test code and strings/comments name b and a too: not edges.
        "crates/k/src/e.rs": (
            "// use crate::a::A;\npub const S: &str = \"crate::b::B\";\n"
            "#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n"
        ),
    })
    g = ic.graphs(tmp_path)["k"]
    assert g["a.rs"] == {"b.rs": {"B", "other"}, "c/mod.rs": {"c"}}
    assert g["b.rs"] == {"a.rs": {"A"}}
    assert g["c/mod.rs"] == {}
    assert g["c/d.rs"] == {"c/mod.rs": {"C"}}
    assert g["e.rs"] == {}
    assert g["f.rs"] == {"b.rs": {"B"}}
    assert ic.circles(g) == [["a.rs", "b.rs"]]


def test_python_edges_count_lazy_imports_and_skip_a_package_face(tmp_path: Path) -> None:
    _write(tmp_path, {
        "crates/.keep": "",
        # The package re-exports x and y (its face); x imports y; y imports x inside a
        # function: one circle x <-> y, the package outside it.
        "python/l4slab/__init__.py": "from l4slab.x import run\nfrom .y import helper\n",
        "python/l4slab/x.py": "from l4slab.y import helper\n\ndef run():\n    return helper()\n",
        "python/l4slab/y.py": "def helper():\n    from . import x\n    return x\n",
        # z takes `run` through the package: an edge to x, where it is defined; `_core` is
        # the compiled extension, outside the package.
        "python/l4slab/z.py": "from l4slab import run, _core\n",
        # The sub-package uses what it imports (more than a face): w <-> sub.
        "python/l4slab/sub/__init__.py": (
            "from l4slab.sub.w import W\n\ndef make():\n    return W()\n"
        ),
        "python/l4slab/sub/w.py": (
            "class W:\n    def other(self):\n        from l4slab.sub import make\n"
            "        return make\n"
        ),
    })
    g = ic.graphs(tmp_path)["python l4slab"]
    assert g["l4slab"] == {}
    assert g["l4slab.x"] == {"l4slab.y": {"helper"}}
    assert g["l4slab.y"] == {"l4slab.x": {"x"}}
    assert g["l4slab.z"] == {"l4slab.x": {"run"}}
    assert ic.circles(g) == [["l4slab.sub", "l4slab.sub.w"], ["l4slab.x", "l4slab.y"]]
