import os
import subprocess
import sys
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

package_name = "acomms_sim"
# .proto files whose Python code is generated at build time (never kept in git).
PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), package_name, "netsim")


def generate_protobuf_code() -> None:
    """netsim.proto -> netsim_pb2.py next to it, with grpc_tools' protoc (grpcio-tools)."""
    for proto in sorted(glob(os.path.join(PROTO_DIR, "*.proto"))):
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={PROTO_DIR}",
                        f"--python_out={PROTO_DIR}", proto], check=True)


class BuildPyWithProtobuf(build_py):
    def run(self):
        generate_protobuf_code()
        super().run()


class DevelopWithProtobuf(develop):
    def run(self):
        generate_protobuf_code()
        super().run()


setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
    ],
    install_requires=["setuptools"],
    cmdclass={"build_py": BuildPyWithProtobuf, "develop": DevelopWithProtobuf},
    zip_safe=True,
    maintainer="acomms maintainers",
    maintainer_email="maintainers@acomms.example.org",
    description="Acoustic channel and modem simulator for acomms.",
    license="LGPL-3.0-or-later",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "modem_sim_node = acomms_sim.nodes.modem_sim_node:main",
            "sim_transmission_loss_node = acomms_sim.nodes.sim_transmission_loss_node:main",
            "sim_packet_performance_node = acomms_sim.nodes.sim_packet_performance_node:main",
            "platform_location_node = acomms_sim.nodes.platform_location_node:main",
            "sim_clock_node = acomms_sim.nodes.sim_clock_node:main",
            "micromodem_emulator = acomms_sim.emulator.micromodem_emulator:main",
            "evologics_emulator = acomms_sim.emulator.evologics_emulator:main",
            "acomms_link_budget = acomms_sim.tools.link_budget:main",
            "netsim_manager = acomms_sim.netsim.manager:main",
            "netsim_manager_node = acomms_sim.netsim.manager_node:main",
            "simple_noise_model_node = acomms_sim.nodes.simple_noise_model_node:main",
        ],
    },
)
