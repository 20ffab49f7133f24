"""The README's ROS-install commands: PEP 668-safe, every package they name pinned, and the very
lines CI runs (scripts/readme_ros_install.sh in .github/workflows/ci.yml), and every module the
packages import installed by them (a rosdep key or the venv's pip line)."""

import ast
import pathlib
import re
import sys
from xml.etree import ElementTree

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_block(name: str) -> list[str]:
    """The lines scripts/readme_ros_install.sh runs for <!-- name:begin/end -->."""
    text = (ROOT / "README.md").read_text()
    block = text.split(f"<!-- {name}:begin -->", 1)[1].split(f"<!-- {name}:end -->")[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("```")]


def ros_install_block() -> list[str]:
    return readme_block("ros-install")


def test_no_pip_into_the_system_python():
    lines = ros_install_block()
    assert lines, "README.md has no ros-install block"
    for line in lines:
        assert "--break-system-packages" not in line
        assert "PIP_BREAK_SYSTEM_PACKAGES" not in line
        if re.search(r"\bpip3? install", line) and not line.lstrip().startswith("#"):
            assert "~/.venvs/acomms/bin/pip" in line, line
    assert any("venv --system-site-packages" in line for line in lines)


def test_every_pip_package_is_pinned_in_requirements():
    (pip_line,) = [line for line in ros_install_block() if "bin/pip install" in line]
    names = re.search(r"\^\((.*?)\)==", pip_line).group(1).split("|")
    pinned = {line.split("==")[0] for line in (ROOT / "requirements.txt").read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    assert set(names) <= pinned, set(names) - pinned


def test_ci_runs_the_readme_blocks():
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert "run: scripts/readme_ros_install.sh ros-install" in workflow
    assert "run: scripts/readme_ros_install.sh ros-launch" in workflow
    assert "--break-system-packages" not in workflow
    launch = readme_block("ros-launch")
    assert launch[-1].startswith("python scripts/launch_check.py"), launch
    # `ros2` is /usr/bin/python3: without the venv on PYTHONPATH the launch files cannot import
    # acomms' PyPI dependencies (ltcodecs, crccheck ...)
    assert any(line.startswith("export PYTHONPATH=") and "purelib" in line for line in launch)
    assert launch.index("source ~/.venvs/acomms/bin/activate") < len(launch) - 1


# Top-level modules acomms imports that are not ROS packages: the rosdep key (an apt package on
# Ubuntu) or the PyPI distribution (the README's venv) that provides each.
PROVIDERS = {
    "numpy": "python3-numpy", "scipy": "python3-scipy", "yaml": "python3-yaml",
    "serial": "python3-serial", "pyproj": "python3-pyproj",
    "cryptography": "python3-cryptography", "matplotlib": "python3-matplotlib",
    "hypothesis": "python3-hypothesis", "pytest": "python3-pytest",
    "google": "protobuf", "bitstring": "bitstring", "crccheck": "crccheck",
    "ltcodecs": "ltcodecs", "acomms": "acomms", "whoi_uwapm": "whoi-uwapm", "mcap": "mcap",
    "mcap_ros2": "mcap-ros2-support", "foxglove": "foxglove-sdk",
}
OPTIONAL = {"buoy_interfaces"}  # tests skip without it (scripts/buoy_interfaces.sh)
OWN = {"acomms_core", "acomms_sim", "acomms_driver", "acomms_bringup", "acomms_interfaces"}


def imported_modules() -> dict[str, str]:
    """{top-level module: a file importing it} over the packages' code and tests (setup.py and
    the tests' own helper modules aside)."""
    found = {}
    for path in sorted(ROOT.glob("acomms_*/**/*.py")):
        if path.name == "setup.py" or "template" in str(path):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {name.split(".")[0] for name in names}:
                local = (path.parent / f"{top}.py").exists() or (ROOT / "bench" / f"{top}.py"
                                                                 ).exists()
                if not (top in sys.stdlib_module_names or top in OWN or top in OPTIONAL
                        or local):
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_module_is_installed_by_the_readme():
    """rosdep installs what some package.xml names; the venv what the pip line names."""
    keys = {element.text for path in ROOT.glob("acomms_*/package.xml")
            for element in ElementTree.parse(path).getroot()
            if element.tag.endswith("depend")}
    (pip_line,) = [line for line in readme_block("ros-install") if "bin/pip install" in line]
    pip_names = set(re.search(r"\^\((.*?)\)==", pip_line).group(1).split("|"))
    missing = {module: where for module, where in imported_modules().items()
               if PROVIDERS.get(module, module) not in keys | pip_names}
    assert not missing, f"imported but neither a rosdep key nor in the pip line: {missing}"
