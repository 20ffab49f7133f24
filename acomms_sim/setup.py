from glob import glob

from setuptools import find_packages, setup

package_name = "acomms_sim"

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
            "acomms_link_budget = acomms_sim.tools.link_budget:main",
        ],
    },
)
