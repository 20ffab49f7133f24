"""ros_acomms (ROS 1) names and their counterparts here: one table, ROS-free.

The table (`SECTIONS`) lists every ros_acomms 9 node's parameters, topics, services and
interfaces with the acomms counterpart (None: not supported, the note says why). It drives:
- `markdown()`: the table in docs/MIGRATING_FROM_ROS_ACOMMS.md (a test keeps them equal);
- `interface_alias()`: `ros_acomms_msgs/...` type names resolve to `acomms_interfaces`;
- `parameter_renames()` / `rename_parameters()`: a ros_acomms parameter name with a counterpart
  under another name is accepted with a deprecation note;
- `unit_alias()`: `_m_s` key suffixes are read as the `_mps` convention;
- `did_you_mean()`: the difflib suggestion every unknown-key error uses.
"""

from __future__ import annotations

import difflib
from typing import NamedTuple

# ROS 1 packages whose interfaces live in acomms_interfaces.
INTERFACE_PACKAGES = {"ros_acomms_msgs": "acomms_interfaces",
                      "ros_acomms_modeling": "acomms_interfaces"}
# ROS 1 packages of ros_acomms whose interfaces have no counterpart here: why, and what to do.
PACKAGES_WITHOUT_COUNTERPART = {
    "ros_acomms_tests": (
        "ros_acomms' own test package (ROS 1; e.g. FragmentationTestMsg: uint8[] data, "
        "string hashstr), not part of acomms",
        "build a ROS 2 interface package named ros_acomms_tests with that message (msg/"
        "<Name>.msg) and source its install/setup.bash before starting, or change ros_type "
        "to a type of an installed package"),
}
INTERFACES_TITLE = "interfaces"
KINDS = ("param", "pub", "sub", "srv", "cli", "msg", "srv-type")


class Section(NamedTuple):
    """One ros_acomms node (or the interfaces): (kind, theirs, ours or None, note) rows."""

    title: str
    executable: str | None
    rows: tuple[tuple[str, str, str | None, str], ...]


def did_you_mean(name: str, candidates) -> str:
    """' (did you mean 'x'?)' for the closest candidate, '' when none is close."""
    close = difflib.get_close_matches(str(name), sorted(str(c) for c in candidates), n=1,
                                      cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unit_alias(key: str) -> str | None:
    """'sound_speed_m_s' -> 'sound_speed_mps' (the one unit convention); None otherwise."""
    return key[: -len("_m_s")] + "_mps" if key.endswith("_m_s") else None


def interface_alias(type_name: str) -> str | None:
    """'ros_acomms_msgs/CST' -> 'acomms_interfaces/CST' (kind part kept); None: not an alias."""
    package, sep, rest = str(type_name).strip().partition("/")
    if not sep or package not in INTERFACE_PACKAGES:
        return None
    return f"{INTERFACE_PACKAGES[package]}/{rest}"


def unsupported_interface(type_name: str) -> str | None:
    """Why a ros_acomms message or service type has no counterpart here; None if it has one."""
    name = str(type_name).rsplit("/", 1)[-1]
    for section in SECTIONS:
        for kind, theirs, ours, note in section.rows:
            if kind in ("msg", "srv-type") and theirs == name and ours is None:
                return note
    return None


def missing_package_hint(type_name: str) -> str | None:
    """For a type of a ros_acomms package without counterpart here (PACKAGES_WITHOUT_COUNTERPART):
    which package provides it and what to do; None otherwise."""
    package = str(type_name).strip().partition("/")[0]
    if package not in PACKAGES_WITHOUT_COUNTERPART:
        return None
    what, todo = PACKAGES_WITHOUT_COUNTERPART[package]
    return f"'{package}' is {what}; hint: {todo}"


def _param_rows(executable: str | None):
    for section in SECTIONS:
        if executable is None or section.executable == executable:
            yield from (row for row in section.rows if row[0] == "param")


# Counterparts whose value means something else (1/rate, a start time): not a plain rename.
_VALUE_CHANGES = frozenset({"publish_rate", "start_sim_at_current_time"})


def parameter_renames(executable: str | None = None) -> dict[str, str]:
    """{ros_acomms name: our name} of parameters renamed here (of one executable, or all)."""
    return {theirs: ours for _, theirs, ours, _ in _param_rows(executable)
            if ours and ours != theirs and theirs not in _VALUE_CHANGES
            and not theirs.startswith("<")}  # '<rosparam file>': not a parameter name


def unsupported_parameters(executable: str | None = None) -> dict[str, str]:
    """{ros_acomms name: why} of parameters without a counterpart."""
    return {theirs: note for _, theirs, ours, note in _param_rows(executable) if ours is None}


def rename_parameters(params: dict, renames: dict[str, str], where: str,
                      what: str = "the ros_acomms name") -> tuple[dict, list]:
    """params with old names (ros_acomms', or `what`) replaced by ours, and one note per rename.

    Giving both names is refused (ValueError) rather than silently picking one.
    """
    renamed, notes = dict(params), []
    for old, new in renames.items():
        if old not in renamed:
            continue
        if new in renamed:
            raise ValueError(f"{where}: both '{old}' ({what}) and '{new}' are given; "
                             f"use '{new}'")
        renamed[new] = renamed.pop(old)
        notes.append(f"{where}: '{old}' is {what}; read as '{new}' (use '{new}')")
    return renamed, notes


def _cell(name: str | None) -> str:
    return f"`{name}`" if name else "—"


def _table(rows) -> list[str]:
    lines = ["| kind | ros_acomms | acomms | notes |", "|---|---|---|---|"]
    for kind, theirs, ours, note in rows:
        lines.append(f"| {kind} | `{theirs}` | {_cell(ours)} | {note} |" if note
                     else f"| {kind} | `{theirs}` | {_cell(ours)} | |")
    return lines


def markdown() -> str:
    """The migration table as docs/MIGRATING_FROM_ROS_ACOMMS.md shows it."""
    lines = ["## Nodes", ""]
    for section in SECTIONS:
        if section.title == INTERFACES_TITLE:
            lines += ["## Interfaces", "", *_table(section.rows), ""]
            continue
        acomms = f"`{section.executable}`" if section.executable else "none"
        lines += [f"### {section.title}", f"acomms: {acomms}", "", *_table(section.rows), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


SECTIONS: tuple[Section, ...] = (
    Section('message_queue_node', 'message_queue_node', (
        ('param', 'update_rate', 'update_rate', 'Hz'),
        ('param', 'unknown_dests_are_reachable', 'unknown_dests_are_reachable', ''),
        ('param', 'default_dest', 'default_dest',
         "ros_acomms default 121; ours: the modem profile's broadcast address"),
        ('param', 'default_priority', 'default_priority', ''),
        ('param', 'src', 'src',
         'searched up the namespace in ros_acomms; unset (-1): asked from `query_modem_src`'),
        ('param', 'packet_codec_file', 'packet_codec_file',
         'searched up the namespace; or `codec_config_file`'),
        ('param', 'codec_directory', 'codec_directory', 'base of relative `!include` paths'),
        ('param', 'custom_packet_codec_paths', 'custom_packet_codec_paths', ''),
        ('param', 'acquire_lock_max_attempts', None, 'one lock, no retry loop'),
        ('pub', 'queue_status', 'queue_status', '+ `queue_counters`'),
        ('sub', 'queue_priority', 'queue_priority', ''),
        ('sub', 'queue_enable', 'queue_enable', ''),
        ('sub', 'neighbor_reachability', 'neighbor_reachability', ''),
        ('sub', '<subscribe_topic>', 'subscribe_topic',
         'one per message codec, from the codec config'),
        ('srv', 'get_next_packet_data', 'get_next_packet_data', ''),
        ('cli', 'query_modem_src', 'query_modem_src', 'only while `src` is unset'),
        ('cli', '<dynamic_queue_service>', 'dynamic_queue_service',
         'codec config key: a dynamic queue asked with GetNextQueuedMessage'),
        ('pub', '<dynamic_update_topic>', 'dynamic_update_topic',
         'codec config key: UpdateQueuedMessage'),
    )),
    Section('packet_dispatch_node', 'packet_dispatch_node', (
        ('param', 'packet_rx_topic', None, 'remap `packet_rx`'),
        ('param', 'packet_codec_file', 'packet_codec_file',
         'searched up the namespace; or `codec_config_file`'),
        ('param', 'codec_directory', 'codec_directory', ''),
        ('param', 'custom_packet_codec_paths', 'custom_packet_codec_paths', ''),
        ('sub', 'packet_rx', 'packet_rx', ''),
        ('pub', '<publish_topic>', 'publish_topic', 'one per message codec; + `dispatch_status`'),
    )),
    Section('acomms_driver_node', 'acomms_driver_node', (
        ('param', 'modem_connection_type', 'modem_connection_type', ''),
        ('param', 'modem_serial_port', 'modem_serial_port', ''),
        ('param', 'modem_baud_rate', 'modem_baud_rate', ''),
        ('param', 'modem_remote_host', 'modem_remote_host', ''),
        ('param', 'modem_remote_port', 'modem_remote_port', ''),
        ('param', 'modem_local_host', 'modem_local_host', ''),
        ('param', 'modem_local_port', 'modem_local_port', ''),
        ('param', 'modem_config', 'modem_config',
         'a YAML mapping string (ROS 2 parameters are not dicts)'),
        ('param', 'set_modem_time', 'set_modem_time', ''),
        ('param', 'pwramp_txlevel', 'pwramp_txlevel', ''),
        ('param', 'use_legacy_packets', 'use_legacy_packets', ''),
        ('param', 'use_tdp', 'use_tdp', ''),
        ('param', 'publish_partial_packets', 'publish_partial_packets', ''),
        ('param', 'default_modem_dest', 'default_modem_dest', ''),
        ('param', 'packet_rx_topic', None, 'remap `packet_rx`'),
        ('param', 'use_janus_packets', 'use_janus_packets', ''),
        ('param', 'use_ping_payload', None, 'ping payloads not supported'),
        ('param', 'ping_maximum_miniframe_bytes', None, 'ping payloads not supported'),
        ('pub', 'packet_rx', 'packet_rx', ''),
        ('pub', 'cst', 'cst', ''),
        ('pub', 'xst', 'xst', ''),
        ('pub', 'nmea_from_modem', 'nmea_from_modem', ''),
        ('pub', 'ping_reply', 'ping_reply', ''),
        ('pub', 'txf', 'txf', ''),
        ('pub', 'ack', 'ack', ''),
        ('pub', 'ping_transponders_reply', None, 'answered in the `ping_transponders` response'),
        ('pub', 'carev', None,
         '`$CAREV` is handled inside the driver (reboots re-run the handshake)'),
        ('pub', 'nst', None,
         '`$CANST` noise statistics are not parsed (they reach `nmea_from_modem`)'),
        ('pub', 'sst', None, 'statistics are in `cst`'),
        ('pub', 'pdt', None, 'the `$CCPDT` command is made by the `ping_transponders` service'),
        ('pub', 'pgt', None, '`$CCPGT` transponder pings are not supported'),
        ('pub', 'tta', None, 'in the `ping_transponders` response'),
        ('pub', '/node_status/<node>', '/diagnostics', ''),
        ('sub', 'nmea_to_modem', 'nmea_to_modem', ''),
        ('srv', 'queue_tx_packet', 'queue_tx_packet', ''),
        ('srv', 'ping_modem', 'ping_modem', ''),
        ('srv', 'ping_transponders', 'ping_transponders', ''),
        ('srv', 'query_modem_src', 'query_modem_src', ''),
        ('srv', 'query_modem_param', 'query_modem_param', ''),
        ('cli', 'get_next_packet_data', None, 'ping payloads not supported'),
    )),
    Section('modem_sensor_data_node', 'modem_sensor_data_node', (
        ('param', 'query_interval_seconds', 'query_interval_s', ''),
        ('param', 'enable_battery_query', None, 'battery state is not queried'),
        ('param', 'battery_state_topic', None, 'battery state is not queried'),
        ('pub', 'modem_sensor_data', 'modem_sensor_data', ''),
        ('pub', 'nmea_to_modem', 'nmea_to_modem', ''),
        ('sub', 'nmea_from_modem', 'nmea_from_modem', ''),
        ('pub', '<battery_state_topic>', None, 'battery state is not queried'),
    )),
    Section('tdma_node (tdma_mac)', 'tdma_node', (
        ('param', 'num_slots', 'num_slots', ''),
        ('param', 'slot_duration_seconds', 'slot_duration_seconds', ''),
        ('param', 'active_slots', 'active_slots', 'int, list or range string'),
        ('param', 'cycle_start_time', 'cycle_start_time', ''),
        ('param', 'guard_time_seconds', 'guard_time_seconds', ''),
        ('param', 'packet_length_seconds', 'packet_length_seconds', ''),
        ('param', 'always_send_test_data', 'always_send_test_data', ''),
        ('param', 'maximum_miniframe_bytes', 'maximum_miniframe_bytes', ''),
        ('param', 'maximum_dataframe_bytes', 'maximum_dataframe_bytes', ''),
        ('param', 'miniframe_rate', 'miniframe_rate', ''),
        ('param', 'dataframe_rate', 'dataframe_rate', ''),
        ('param', 'slot_tags', 'slot_tags', ''),
        ('param', 'wait_for_services_timeout_sec', 'service_timeout_seconds', ''),
        ('param', '<rosparam file>', 'ros_acomms_params_file',
         "the node's ROS 1 parameter file, read as given (every TDMA MAC; scenario `mac:` key)"),
        ('param', 'publish_private_status', None, 'status is `tdma_status` (remap it)'),
        ('param', 'allow_manual_tx_during_priority_slots', 'allow_manual_tx_during_priority_slots',
         ''),
        ('param', 'maxlen_manual_queue', 'maxlen_manual_queue', ''),
        ('pub', 'tdma_status', 'tdma_status', ''),
        ('pub', 'tdma/manual_transmit_status', None,
         'manual transmits are counted on /diagnostics (`manual_transmits_*`)'),
        ('sub', 'tdma/nmea_to_modem', 'tdma/nmea_to_modem',
         'sent on `nmea_to_modem` in the next transmit opportunity'),
        ('sub', 'txf', None,
         "the MAC times a packet by `packet_length_seconds`; the driver's `txf` is not read"),
        ('cli', 'get_next_packet_data', 'get_next_packet_data', ''),
        ('cli', 'queue_tx_packet', 'queue_tx_packet', ''),
    )),
    Section('tdma_advanced_node (tdma_advanced_mac)', 'tdma_advanced_node', (
        ('param', 'software_mute', 'software_mute', ''),
        ('param', 'comms_slots', 'comms_slots', ''),
        ('param', 'nav_slots', 'nav_slots', ''),
        ('param', 'pings_per_slot', 'pings_per_slot', ''),
        ('param', 'ping_modem', 'ping_modem', ''),
        ('param', 'ping_modem_src', 'ping_modem_src', ''),
        ('param', 'ping_modem_timeout_sec', 'ping_modem_timeout_sec', ''),
        ('param', 'ping_transponders', 'ping_transponders', ''),
        ('param', 'ping_transponder_a', 'ping_transponder_a', 'also `_b`, `_c`, `_d`'),
        ('param', 'ping_cdr', 'ping_cdr', ''),
        ('param', 'transponder_reply_timeout_sec', 'transponder_reply_timeout_sec', ''),
        ('param', 'skew_cycle_sec', 'skew_cycle_sec', ''),
        ('param', 'wait_for_services_timeout_sec', 'service_timeout_seconds', ''),
        ('pub', 'tdma_advanced_status', 'tdma_advanced_status',
         "with ros_acomms' flat fields"),
        ('sub', '~set_software_mute', 'set_software_mute',
         "relative to the node's namespace (mac_switcher_node sends it)"),
        ('sub', '~change_auto_ping_modem_src', None, 'set the `ping_modem_src` parameter'),
        ('cli', 'ping_modem', 'ping_modem', ''),
        ('cli', 'ping_transponders', 'ping_transponders', ''),
    )),
    Section('tdma_scripted_node (tdma_scripted_mac)', 'tdma_scripted_node', (
        ('param', 'tdma_scripted_test_plan_file', 'tdma_scripted_test_plan_file', ''),
        ('param', 'tdma_scripted_test_plan_enabled', 'tdma_scripted_test_plan_enabled', ''),
        ('param', 'tdma_scripted_test_plan', None,
         'a ROS 2 parameter cannot be a dict: use the file'),
        ('param', 'cycle_on_tx_packet', None, 'a key of each test plan entry here'),
        ('pub', 'tdma_scripted_status', 'tdma_scripted_status',
         "with ros_acomms' flat fields"),
        ('pub', 'nmea_to_modem', 'nmea_to_modem', ''),
    )),
    Section('tdma_slotted_aloha_node (tdma_slotted_aloha_mac)', 'tdma_slotted_aloha_node', (
        ('param', 'aloha_slots', 'aloha_slots', ''),
        ('param', 'aloha_slot_priority', 'aloha_slot_priority', ''),
        ('param', 'allow_aloha_slots_only', 'allow_aloha_slots_only', ''),
        ('pub', 'tdma_slotted_aloha_status', 'tdma_slotted_aloha_status', ''),
    )),
    Section('mac_switcher_node (mac_switcher)', 'mac_switcher_node', (
        ('param', 'default_mac_namespace', 'default_mac_namespace', ''),
        ('param', 'managed_mac_namespaces', 'managed_mac_namespaces', ''),
        ('param', 'managed_mac_heartbeat_timeout_sec', 'managed_mac_heartbeat_timeout_sec', ''),
        ('param', 'revert_on_deselect', 'revert_on_deselect', ''),
        ('param', 'publish_private_status', None, 'remap the status topic'),
        ('sub', '~<ns>/select', '~/<ns>/select', ''),
        ('sub', '~<ns>/heartbeat', '~/<ns>/heartbeat', ''),
        ('pub', '<ns>/set_software_mute', '<ns>/set_software_mute', ''),
        ('pub', 'mac_switcher_status', 'mac_switcher_status', ''),
    )),
    Section('link_layer_feedback_node, acoustic_range_node, version_node', None, (
        ('param', 'destination_address', None, 'link-layer feedback not supported'),
        ('param', 'link_stats_feedback_codec_file', None, 'link-layer feedback not supported'),
        ('param', 'message_priority', None, 'link-layer feedback not supported'),
        ('param', 'minimum_update_interval_seconds', None, 'link-layer feedback not supported'),
        ('sub', 'cst', None, 'link-layer feedback not supported'),
        ('sub', 'sst', None, 'link-layer feedback not supported'),
        ('sub', 'update_link_feedback_queue', None, 'link-layer feedback not supported'),
        ('srv', 'get_next_link_feedback_message', None, 'link-layer feedback not supported'),
        ('param', 'sound_speed', None,
         'acoustic ranges not published; `ping_reply` carries the travel time'),
        ('param', 'sound_speed_max_age_sec', None, 'acoustic ranges not supported'),
        ('param', 'acoustic_range_topic', None, 'acoustic ranges not supported'),
        ('param', 'ping_reply_topic', None, 'acoustic ranges not supported'),
        ('param', 'ping_transponders_reply_topic', None, 'acoustic ranges not supported'),
        ('param', 'sound_speed_topic', None, 'acoustic ranges not supported'),
        ('param', 'manual_sound_speed_topic', None, 'acoustic ranges not supported'),
        ('pub', 'acoustic_range', None, 'acoustic ranges not supported'),
        ('sub', 'ping_reply', None, 'acoustic ranges not supported'),
        ('sub', 'ping_transponders_reply', None, 'acoustic ranges not supported'),
        ('sub', 'ctd', None, 'acoustic ranges not supported'),
        ('sub', '~manual_sound_speed', None, 'acoustic ranges not supported'),
    )),
    Section('modem_sim_node (ros_acomms_modeling)', 'modem_sim_node', (
        ('param', 'SRC', 'SRC', ''),
        ('param', 'center_frequency_hz', 'center_frequency_hz', ''),
        ('param', 'bandwidth_hz', 'bandwidth_hz', ''),
        ('param', 'ambient_noise_db', 'ambient_noise_db', ''),
        ('param', 'latitude', 'latitude', ''),
        ('param', 'longitude', 'longitude', ''),
        ('param', 'depth', 'depth', ''),
        ('param', 'modem_location_source', 'location_source', 'static, service or topic'),
        ('param', 'modem_location_topic', 'modem_location_topic', ''),
        ('param', 'use_sim_time', 'use_sim_time', ''),
        ('param', 'packet_rx_topic', None, 'remap `packet_rx`'),
        ('param', 'verbose', None, 'use `--log-level`'),
        ('param', 'use_ping_payload', None, 'ping payloads not supported'),
        ('param', 'ping_maximum_miniframe_bytes', None, 'ping payloads not supported'),
        ('param', 'use_tick_time', None, "sim_clock_node mode `lockstep` moves every node's clock"),
        ('param', 'use_sim_tick', None, 'sim_clock_node mode `lockstep`'),
        ('param', 'tick_topic_name', None, '`/tick` (sim_clock_node)'),
        ('param', 'tock_topic_name', None, '`/tock` (sim_clock_node)'),
        ('pub', 'packet_rx', 'packet_rx', ''),
        ('pub', 'transmit', 'transmit', ''),
        ('pub', 'cst', 'cst', ''),
        ('pub', '/acoustic_channel', '/acoustic_channel', ''),
        ('pub', 'xst', None, '`transmit` carries the transmit facts'),
        ('pub', 'sst', None, 'statistics are in `cst`'),
        ('pub', 'ping_reply', None, 'in the `ping_modem` response'),
        ('pub', '~acoustic_range', None, 'acoustic ranges not supported'),
        ('sub', '/acoustic_channel', '/acoustic_channel', ''),
        ('sub', 'location', 'location',
         '`modem_location_topic`; also odometry, pose, NavSatFix (`location_topic_type`)'),
        ('sub', 'ambient_noise', 'ambient_noise', 'from `simple_noise_model_node`'),
        ('srv', 'queue_tx_packet', 'queue_tx_packet', ''),
        ('srv', 'ping_modem', 'ping_modem', ''),
        ('srv', 'query_modem_src', 'query_modem_src', ''),
        ('cli', '/sim_transmission_loss', 'sim_transmission_loss',
         'remapped to the global service by the stack'),
        ('cli', '/sim_packet_performance', None, 'the modem computes frame errors in-process'),
        ('cli', '/sim_travel_time', None, 'the modem computes travel times in-process'),
        ('cli', 'get_next_packet_data', None, 'ping payloads not supported'),
    )),
    Section('sim_transmission_loss_node', 'sim_transmission_loss_node', (
        ('param', 'model', 'transmission_loss_model', 'spreading or bellhop'),
        ('param', 'sound_speed', 'sound_speed_mps', ''),
        ('param', 'water_depth', 'water_depth_m', ''),
        ('param', 'bottom_type', None, 'Bellhop runs with its default bottom'),
        ('param', 'ssp_file_name', None, 'publish `sound_speed_profile`'),
        ('param', 'use_water_depth_from_ssp', None, 'give `water_depth_m`'),
        ('param', 'plot', None,
         '`acomms_link_budget --ranges` prints TL and SNR vs range; `bench/per_vs_range.py` plots'),
        ('sub', 'sound_speed_profile', 'sound_speed_profile', ''),
        ('srv', 'sim_transmission_loss', 'sim_transmission_loss', ''),
        ('srv', 'get_optimal_tx_depth', 'get_optimal_tx_depth', ''),
        ('srv', 'sim_travel_time', None,
         '`transmission_delay` is in the `sim_transmission_loss` response'),
    )),
    Section('sim_packet_performance_node', 'sim_packet_performance_node', (
        ('param', 'random_seed', 'seed', ''),
        ('param', 'fixed_frame_error_rate', None, 'frame error rates come from the SNR tables'),
        ('srv', 'sim_packet_performance', 'sim_packet_performance', ''),
    )),
    Section('clock_generator', 'sim_clock_node', (
        ('param', 'multiplier', 'warp_factor', ''),
        ('param', 'publish_rate', 'publish_period_s', '1 / rate'),
        ('param', 'start_sim_at_current_time', 'start_time_s',
         'scenario `clock.start_time` (default 2025-01-01T00:00:00Z)'),
        ('pub', 'clock', '/clock', ''),
    )),
    Section('modem_location_sim_node', None, (
        ('param', 'period', None, 'trajectory_node follows scenario waypoints instead'),
        ('param', 'simple_path', None, 'trajectory_node'),
        ('param', 'simple_path_offset', None, 'trajectory_node'),
        ('param', 'min_depth', None, 'trajectory_node'),
        ('param', 'max_depth', None, 'trajectory_node'),
        ('param', 'random_seed', None, 'the scenario `seed` seeds every random process'),
        ('pub', 'location', None, 'trajectory_node publishes `fix` (NavSatFix)'),
    )),
    Section('simple_noise_model_node', 'simple_noise_model_node', (
        ('param', 'mean_noise_db', 'mean_noise_db', ''),
        ('param', 'noise_stddev_db', 'noise_stddev_db', ''),
        ('param', 'update_every_seconds', 'update_every_seconds', 'node clock (sim time)'),
        ('param', 'random_seed', 'random_seed', '-1: a fresh seed each run'),
        ('pub', 'ambient_noise', 'ambient_noise', 'modem_sim_node subscribes it'),
    )),
    Section(INTERFACES_TITLE, None, (
        ('msg', 'CST', 'CST', ''),
        ('msg', 'XST', 'XST', ''),
        ('msg', 'Packet', 'Packet', ''),
        ('msg', 'ReceivedPacket', 'ReceivedPacket', ''),
        ('msg', 'TransmittedPacket', 'TransmittedPacket', ''),
        ('msg', 'PingReply', 'PingReply', ''),
        ('msg', 'QueueStatus', 'QueueStatus', ''),
        ('msg', 'QueueSummary', 'QueueSummary', ''),
        ('msg', 'SummaryMessageCount', 'SummaryMessageCount', ''),
        ('msg', 'QueueEnable', 'QueueEnable', ''),
        ('msg', 'QueuePriority', 'QueuePriority', ''),
        ('msg', 'NeighborReachability', 'NeighborReachability', ''),
        ('msg', 'ModemAck', 'ModemAck', ''),
        ('msg', 'ModemSensorData', 'ModemSensorData', ''),
        ('msg', 'MacSwitcherStatus', 'MacSwitcherStatus', ''),
        ('msg', 'ManagedMacState', 'ManagedMacState', ''),
        ('msg', 'SoundSpeedProfile', 'SoundSpeedProfile', ''),
        ('msg', 'TdmaStatus', 'TdmaStatus', ''),
        ('msg', 'TdmaAdvancedStatus', 'TdmaAdvancedStatus',
         "with ros_acomms' flat fields"),
        ('msg', 'TdmaScriptedStatus', 'TdmaScriptedStatus',
         "with ros_acomms' flat fields"),
        ('msg', 'TdmaSlottedAlohaStatus', 'TdmaSlottedAlohaStatus', ''),
        ('msg', 'Location', 'Location', 'from ros_acomms_modeling'),
        ('msg', 'SimPacket', 'SimPacket', 'from ros_acomms_modeling'),
        ('msg', 'Tick', 'Tick', 'from ros_acomms_modeling'),
        ('msg', 'Tock', 'Tock', 'from ros_acomms_modeling'),
        ('msg', 'AcousticRange', None, 'acoustic ranges not supported'),
        ('msg', 'AcousticTimesync', None, 'acoustic time sync not supported'),
        ('msg', 'LinkStatsFeedback', None, 'link-layer feedback not supported'),
        ('msg', 'NST', None, 'not published (see acomms_driver_node `nst`)'),
        ('msg', 'SST', None, 'not published (see acomms_driver_node `sst`)'),
        ('msg', 'PDT', None, 'the `PingTransponders` request'),
        ('msg', 'PGT', None, '`$CCPGT` transponder pings are not supported'),
        ('msg', 'TTA', None, 'in the `PingTransponders` response'),
        ('msg', 'PingTranspondersReply', None, 'the `PingTransponders` response'),
        ('msg', 'PingTranspondersRequest', None, 'the `PingTransponders` request'),
        ('msg', 'UpdateQueuedMessage', 'UpdateQueuedMessage', ''),
        ('srv-type', 'GetNextPacketData', 'GetNextPacketData', ''),
        ('srv-type', 'QueueTxPacket', 'QueueTxPacket', ''),
        ('srv-type', 'PingModem', 'PingModem', ''),
        ('srv-type', 'PingTransponders', 'PingTransponders', ''),
        ('srv-type', 'QueryModemSrc', 'QueryModemSrc', ''),
        ('srv-type', 'QueryModemParam', 'QueryModemParam', ''),
        ('srv-type', 'GetNextQueuedMessage', 'GetNextQueuedMessage', ''),
        ('srv-type', 'SimTransmissionLoss', 'SimTransmissionLoss', 'from ros_acomms_modeling'),
        ('srv-type', 'SimPacketPerformance', 'SimPacketPerformance', 'from ros_acomms_modeling'),
        ('srv-type', 'GetOptimalTxDepth', 'GetOptimalTxDepth', 'from ros_acomms_modeling'),
        ('srv-type', 'SimTravelTime', None,
         '`transmission_delay` in the `SimTransmissionLoss` response'),
        ('msg', 'ros_acomms_tests/FragmentationTestMsg', None,
         "ros_acomms' test package; the error says how to build it as a ROS 2 package"),
    )),
)
