"""Size gate for package sources: no function over 60 lines, no class over 300 (issue 10).

Files a newcomer can read in one sitting: long functions and god classes are where mixed jobs
hide. Tests, benches and launch files are not counted.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 300


def _oversized():
    for path in sorted(ROOT.glob("acomms_*/acomms_*/**/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            lines = getattr(node, "end_lineno", 0) - getattr(node, "lineno", 0) + 1
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and lines > MAX_FUNCTION_LINES:
                yield f"{path.relative_to(ROOT)}:{node.lineno} def {node.name}: {lines} lines"
            elif isinstance(node, ast.ClassDef) and lines > MAX_CLASS_LINES:
                yield f"{path.relative_to(ROOT)}:{node.lineno} class {node.name}: {lines} lines"


def test_no_oversized_functions_or_classes():
    oversized = list(_oversized())
    assert not oversized, "\n".join(oversized)
