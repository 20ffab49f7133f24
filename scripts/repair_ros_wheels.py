"""Rewrite build-machine paths baked into the ROS 2 wheels' exported CMake files.

The ros-* wheels are built in a manylinux container whose Python lives under
/opt/python/cpXY-cpXY; their exported CMake targets name that Python's include
directory and numpy's include directory. CMake refuses imported targets whose
include directories do not exist, so point them at this interpreter's paths.
Idempotent: files that no longer mention /opt/python are left untouched.
"""

import pathlib
import re
import sys
import sysconfig

BUILD_PYTHON = re.compile(r"/opt/python/cp\d+-cp\d+t?")
NUMPY_INCLUDE = re.compile(
    r"/opt/python/cp\d+-cp\d+t?/lib/python3\.\d+t?/site-packages/numpy/_core/include"
)
PYTHON_INCLUDE = re.compile(r"/opt/python/cp\d+-cp\d+t?/include/python3\.\d+t?")


def repair(prefix: pathlib.Path) -> int:
    import numpy

    python_include = sysconfig.get_paths()["include"]
    numpy_include = numpy.get_include()
    changed = 0
    for cmake_file in prefix.glob("share/*/cmake/*.cmake"):
        text = cmake_file.read_text()
        if not BUILD_PYTHON.search(text):
            continue
        text = NUMPY_INCLUDE.sub(numpy_include, text)
        text = PYTHON_INCLUDE.sub(python_include, text)
        cmake_file.write_text(text)
        changed += 1
    return changed


if __name__ == "__main__":
    prefix = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    print(f"repair_ros_wheels: rewrote {repair(prefix)} CMake file(s) under {prefix}")
