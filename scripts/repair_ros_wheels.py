"""Rewrite build-machine paths baked into the ROS 2 wheels' exported CMake files.

The ros-* wheels are built in a manylinux container whose Python lives under
/opt/python/cpXY-cpXY; their exported CMake targets name that Python's include
directory and numpy's include directory. CMake refuses imported targets whose
include directories do not exist, so point them at this interpreter's paths.
A numpy include path of another (moved or no longer existing) venv is rewritten too, so a venv
shared between checkouts keeps building. Idempotent: files without such paths are left untouched.
"""

import os
import pathlib
import re
import sys
import sysconfig

BUILD_PYTHON = re.compile(r"/opt/python/cp\d+-cp\d+t?")
NUMPY_INCLUDE = re.compile(
    r"/opt/python/cp\d+-cp\d+t?/lib/python3\.\d+t?/site-packages/numpy/_core/include"
)
PYTHON_INCLUDE = re.compile(r"/opt/python/cp\d+-cp\d+t?/include/python3\.\d+t?")
ANY_NUMPY_INCLUDE = re.compile(r"[^\s\";]*/lib/python3\.\d+t?/site-packages/numpy/_core/include")


def repair(prefix: pathlib.Path) -> int:
    import numpy

    python_include = sysconfig.get_paths()["include"]
    numpy_include = os.path.realpath(numpy.get_include())

    def stale_numpy(match: re.Match) -> str:
        path = match.group(0)
        return path if path == numpy_include or os.path.isdir(path) else numpy_include

    changed = 0
    for cmake_file in prefix.glob("share/*/cmake/*.cmake"):
        original = text = cmake_file.read_text()
        if BUILD_PYTHON.search(text):
            text = NUMPY_INCLUDE.sub(numpy_include, text)
            text = PYTHON_INCLUDE.sub(python_include, text)
        text = ANY_NUMPY_INCLUDE.sub(stale_numpy, text)
        if text != original:
            cmake_file.write_text(text)
            changed += 1
    return changed


if __name__ == "__main__":
    prefix = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    print(f"repair_ros_wheels: rewrote {repair(prefix)} CMake file(s) under {prefix}")
