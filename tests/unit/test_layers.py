"""The layers import only downwards: wiki <- repos <- stages/middleware <- actors <- kbwiki."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = {"wiki", "repos", "stages", "middleware", "actors", "kbwiki"}
ALLOWED = {
    "wiki": {"wiki"},
    "repos": {"repos", "wiki"},
    "stages": {"stages", "repos", "wiki"},
    "middleware": {"middleware", "repos", "wiki"},
    "actors": {"actors", "stages", "repos", "wiki", "middleware"},
    "kbwiki": OURS,
}


def _imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


def test_every_layer_imports_only_the_layers_below_it():
    wrong = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((ROOT / layer).rglob("*.py")):
            bad = _imported_packages(path) - allowed
            if bad:
                wrong.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert wrong == []
