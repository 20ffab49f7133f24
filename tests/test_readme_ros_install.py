"""The README's ROS-install commands: PEP 668-safe, every package they name pinned, and the very
lines CI runs (scripts/readme_ros_install.sh in .github/workflows/ci.yml)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def ros_install_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- ros-install:begin -->", 1)[1].split("<!-- ros-install:end -->")[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("```")]


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


def test_ci_runs_the_readme_block_and_the_launch_check():
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert "run: scripts/readme_ros_install.sh" in workflow
    assert "scripts/launch_check.py" in workflow
    assert "--break-system-packages" not in workflow
