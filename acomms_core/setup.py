from glob import glob

from setuptools import find_packages, setup

package_name = "acomms_core"

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
    description="Transport core of acomms: codecs, message queue, packet dispatch, TDMA.",
    license="LGPL-3.0-or-later",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "tdma_node = acomms_core.nodes.tdma_node:main",
            "tdma_advanced_node = acomms_core.nodes.tdma_advanced_node:main",
            "tdma_scripted_node = acomms_core.nodes.tdma_scripted_node:main",
            "mac_node = acomms_core.nodes.mac_node:main",
            "tdma_slotted_aloha_node = acomms_core.nodes.tdma_slotted_aloha_node:main",
            "carrier_sense_node = acomms_core.nodes.carrier_sense_node:main",
            "mac_switcher_node = acomms_core.nodes.mac_switcher_node:main",
            "message_queue_node = acomms_core.nodes.message_queue_node:main",
            "packet_dispatch_node = acomms_core.nodes.packet_dispatch_node:main",
            "acomms_codec_check = acomms_core.tools.codec_check:main",
            "acomms_security_key = acomms_core.tools.security_key:main",
        ],
    },
)
