"""The size of the code and of the known-issues registry, for docs/benchmarks.md.

    python -m benchmarks.sizes [ROOT]

Prints the largest modules and functions of conformance/ (the style's limits: 500 lines a
module, 80 a function) and how known_issues.toml says how its bugs show: typed
[[issue.shows]] tables, and glob patterns over signature text (the registry's old form).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path


def main(argv=None) -> int:
    root = Path((argv or sys.argv[1:] or [Path(__file__).resolve().parents[1]])[0])
    modules, functions = [], []
    for path in sorted((root / "conformance").rglob("*.py")):
        source = path.read_text()
        name = str(path.relative_to(root))
        modules.append((len(source.splitlines()), name))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{name}:{node.name}"))
    modules.sort(reverse=True)
    functions.sort(reverse=True)
    print(f"{len(modules)} modules; over 500 lines: {sum(n > 500 for n, _ in modules)}; largest: {modules[:3]}")
    print(f"{len(functions)} functions; over 80 lines: {sum(n > 80 for n, _ in functions)}; largest: {functions[:3]}")
    toml = (root / "conformance" / "known_issues.toml").read_text()
    globs = sum(len(re.findall(r'"(?:[^"\\]|\\.)*"', s)) for s in re.findall(r"^signatures = \[(.*)\]$", toml, re.M))
    issues = len(re.findall(r"^\[\[issue\]\]$", toml, re.M))
    tables = len(re.findall(r"^\[\[issue\.shows\]\]$", toml, re.M))
    print(f"known issues: {issues}; typed tables: {tables}; glob patterns: {globs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
