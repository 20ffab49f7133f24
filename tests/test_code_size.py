"""Size gate for package sources: no function over 60 lines, no class over 300 (issue 10), no
module over 600 (issue 27).

Files a newcomer can read in one sitting: long functions, god classes and long modules are where
mixed jobs hide. Tests, benches and launch files are not counted (they live outside the
`acomms_*/acomms_*/` package directories); generated protobuf modules (`*_pb2.py`) neither.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 300
MAX_MODULE_LINES = 600


def _package_sources():
    return [path for path in sorted(ROOT.glob("acomms_*/acomms_*/**/*.py"))
            if not path.name.endswith("_pb2.py")]


def _oversized():
    for path in _package_sources():
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


def _oversized_modules():
    for path in _package_sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            yield f"{path.relative_to(ROOT)}: {lines} lines"


def test_no_module_over_600_lines():
    sources = _package_sources()
    assert len(sources) > 100  # the glob finds the packages' modules
    oversized = list(_oversized_modules())
    assert not oversized, "split by concern (re-export public names from the old module):\n" \
        + "\n".join(oversized)
