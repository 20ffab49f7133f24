from glob import glob

from setuptools import find_packages, setup

package_name = "acomms_driver"

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
    description="Acoustic modem drivers for acomms (WHOI Micromodem).",
    license="LGPL-3.0-or-later",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "acomms_driver_node = acomms_driver.nodes.acomms_driver_node:main",
            "evologics_driver_node = acomms_driver.nodes.evologics_driver_node:main",
            "modem_sensor_data_node = acomms_driver.nodes.modem_sensor_data_node:main",
            "udp_link_driver = acomms_driver.udp.udp_link_driver:main",
            "udp_streamer = acomms_driver.udp.stream_nodes:streamer_main",
            "udp_receiver = acomms_driver.udp.stream_nodes:receiver_main",
        ],
    },
)
