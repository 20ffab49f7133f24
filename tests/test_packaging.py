"""Every package is a real ROS 2 package whose metadata agrees with itself.

Catches what a user of `colcon build` / `ros2 run` would trip over: a package.xml that is not
format 3, a setup.py naming another package, a missing ament resource marker, or a console script
whose module or function does not exist.
"""

import ast
import importlib
import pathlib
import xml.etree.ElementTree as ET

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.parent for p in ROOT.glob("acomms_*/package.xml"))
PYTHON_PACKAGES = [p for p in PACKAGES if (p / "setup.py").exists()]


def test_expected_packages_present():
    names = {p.name for p in PACKAGES}
    assert {"acomms_interfaces", "acomms_core", "acomms_driver", "acomms_sim",
            "acomms_bringup"} <= names


@pytest.mark.parametrize("pkg", PACKAGES, ids=lambda p: p.name)
def test_package_xml(pkg):
    root = ET.parse(pkg / "package.xml").getroot()
    assert root.get("format") == "3"
    assert root.findtext("name") == pkg.name
    assert root.findtext("license")
    build_type = root.find("export/build_type").text
    assert build_type == ("ament_cmake" if (pkg / "CMakeLists.txt").exists() else "ament_python")


def _setup_kwargs(pkg):
    tree = ast.parse((pkg / "setup.py").read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", "") == "setup")
    return {kw.arg: kw.value for kw in call.keywords}


@pytest.mark.parametrize("pkg", PYTHON_PACKAGES, ids=lambda p: p.name)
def test_python_package_layout(pkg):
    assert (pkg / "resource" / pkg.name).is_file()
    assert (pkg / pkg.name / "__init__.py").is_file()
    assert f"install_scripts=$base/lib/{pkg.name}" in (pkg / "setup.cfg").read_text()
    assert f'package_name = "{pkg.name}"' in (pkg / "setup.py").read_text()
    root = ET.parse(pkg / "package.xml").getroot()
    assert _setup_kwargs(pkg)["version"].value == root.findtext("version")


@pytest.mark.parametrize("pkg", PYTHON_PACKAGES, ids=lambda p: p.name)
def test_console_scripts_resolve(pkg):
    entry_points = ast.literal_eval(_setup_kwargs(pkg)["entry_points"])
    for spec in entry_points.get("console_scripts", []):
        name, target = (s.strip() for s in spec.split("="))
        module_name, func_name = target.split(":")
        module = importlib.import_module(module_name)
        assert callable(getattr(module, func_name)), f"{name} -> {target} is not callable"


def test_test_file_names_unique():
    """pytest imports test files by base name; two with one name would shadow each other."""
    names = [p.name for p in ROOT.glob("acomms_*/test/test_*.py")]
    names += [p.name for p in ROOT.glob("tests/test_*.py")]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"rename so each test file name is unique: {duplicates}"
