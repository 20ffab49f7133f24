from glob import glob

from setuptools import find_packages, setup

package_name = "acomms_bringup"

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
    description="Bringup for acomms: scenarios, lifecycle manager, launch files, demo.",
    license="LGPL-3.0-or-later",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "lifecycle_manager = acomms_bringup.nodes.lifecycle_manager:main",
            "trajectory_node = acomms_bringup.nodes.trajectory_node:main",
            "acomms_check_scenario = acomms_bringup.description.stack:main",
            "acomms_run = acomms_bringup.run.cli:main",
            "acomms_sweep = acomms_bringup.run.sweep_cli:main",
            "acomms_participant = acomms_bringup.run.participant:main",
            "cola2_vehicle_bridge = acomms_bringup.bridges.cola2_vehicle_bridge:main",
            "cola2_topside_bridge = acomms_bringup.bridges.cola2_topside_bridge:main",
            "wec_telemetry_bridge = acomms_bringup.bridges.wec_telemetry_bridge:main",
            "remote_service_caller = acomms_bringup.bridges.remote_service_nodes:main_caller",
            "remote_service_server = acomms_bringup.bridges.remote_service_nodes:main_server",
            "wec_standin_buoy = acomms_bringup.bridges.wec_standin:main",
            "wec_standin_operator = acomms_bringup.bridges.wec_standin:main_operator",
            "acomms_recorder = acomms_bringup.nodes.recorder_node:main",
            "netsim_client_node = acomms_bringup.nodes.netsim_client_node:main",
            "file_transfer_node = acomms_bringup.file_transfer.file_transfer_node:main",
            "acomms_send_file = acomms_bringup.file_transfer.send_file_cli:main",
        ],
    },
)
