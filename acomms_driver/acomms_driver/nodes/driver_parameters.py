"""acomms_driver_node's parameters: specs, the pure validator, and what they mean for the client.

ROS-free: `check_parameters` decides on merged candidate values, `client_settings` builds the
client's settings from accepted values and `update_settings` carries run-time changes over.
"""

from __future__ import annotations

import yaml

from acomms_core.modems.registry import (
    MODEM_PROFILE_PARAMETER,
    check_modem_profile,
    modem_profile,
)
from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_driver.micromodem.client_config import ClientSettings
from acomms_driver.micromodem.modem_link import make_link
from acomms_driver.micromodem.receptions import PARTIAL_PACKET_MODES
from acomms_driver.micromodem.session_setup import REQUIRED_CONFIG

CONNECTION_TYPES = ("serial", "tcp", "udp")
# Parameters that describe the link: refused while active (deactivate, change, activate).
LINK_PARAMETERS = ("modem_connection_type", "modem_serial_port", "modem_baud_rate",
                   "modem_remote_host", "modem_remote_port", "modem_local_host",
                   "modem_local_port", "modem_log_dir", "modem_log_max_bytes",
                   "modem_log_backup_count")
CONFIG_QUERIES = ("ALL", "TOP", "")
TXLEVEL_CONFIG = "pwramp.txlevel"

PARAMETERS = (
    ParameterSpec("modem_connection_type", "serial",
                  "how the modem is attached: serial | tcp | udp"),
    ParameterSpec("modem_serial_port", "/dev/ttyUSB0", "serial device of the modem"),
    ParameterSpec("modem_baud_rate", 19200, "serial baud rate", 300, 3000000),
    ParameterSpec("modem_remote_host", "localhost", "modem host for tcp / udp"),
    ParameterSpec("modem_remote_port", 4001, "modem port for tcp / udp", 1, 65535),
    ParameterSpec("modem_local_host", "", "local address to bind for udp ('' = any)"),
    ParameterSpec("modem_local_port", 0, "local udp port (0 = same as modem_remote_port)", 0,
                  65535),
    ParameterSpec("modem_config", "{}",
                  "YAML mapping of modem parameters sent as $CCCFG name,value on every "
                  "connection, e.g. \"{BR1: 3, 'xmit.txinhibit': 1}\""),
    ParameterSpec("set_modem_time", False, "set the modem clock ($CCTMS) on every connection "
                  "and after every modem reboot, checked by its $CATMS reply"),
    ParameterSpec("clock_skew_allowed_s", 1.0, "largest modem clock offset a $CATMS may report "
                  "for the clock to count as set, s", 0.001, 60.0),
    ParameterSpec("modem_config_query", "ALL", "after the handshake, log the modem's parameter "
                  "list with $CCCFQ,<this>: ALL | TOP | '' (none)"),
    ParameterSpec("query_modem_clock", True, "after the handshake, ask the modem's clock "
                  "($CCTMQ) for /diagnostics' clock_offset_s, clock_source and pps_source "
                  "(Micro-Modem 2; off for firmware that refuses it)"),
    MODEM_PROFILE_PARAMETER,
    ParameterSpec("default_modem_dest", -1,
                  "dest used when a queued packet has dest < 0; -1 = the modem profile's "
                  "broadcast address (121 for micromodem2)", -1, 255),
    ParameterSpec("use_legacy_packets", False,
                  "send AUTO/UNKNOWN packets as legacy $CCCYC/$CCTXD packets instead of FDP"),
    ParameterSpec("use_tdp", False, "send FDP packets with $CCTDP (dataframe only)"),
    ParameterSpec("use_janus_packets", False, "send AUTO/UNKNOWN (and JANUS) packets as JANUS "
                  "packets ($CCTJN, dataframe bytes only, ros_acomms' parameter)"),
    ParameterSpec("query_modem_param_timeout_s", 3.0, "query_modem_param: wait this long for "
                  "the modem's $CACFG reply (wall clock), s", 0.1, 30.0),
    ParameterSpec("pwramp_txlevel", 3, "power amplifier level sent as pwramp.txlevel "
                  "(0 loudest .. 3 quietest)", 0, 3),
    ParameterSpec("publish_partial_packets", True,
                  "publish receptions with bad frames"),
    ParameterSpec("partial_packet_mode", "ranges",
                  "bytes of a reception with bad frames: ranges (every frame, the good frames as "
                  "valid ranges) | truncate (ros_acomms: only the bytes before the first bad "
                  "frame)"),
    ParameterSpec("reconnect_initial_s", 0.5,
                  "first reconnection delay (wall clock), s (doubles per failure)", 0.05, 60.0),
    ParameterSpec("reconnect_max_s", 10.0, "longest reconnection delay (wall clock), s", 0.1,
                  600.0),
    ParameterSpec("modem_silence_timeout_s", 30.0,
                  "no sentence for this long (wall clock) = modem silent: reconnect (probed at "
                  "half), s", 1.0,
                  3600.0),
    ParameterSpec("handshake_timeout_s", 2.0,
                  "wait per handshake reply on connection (wall clock), s", 0.1, 30.0),
    ParameterSpec("tx_timeout_s", 60.0,
                  "give up on a packet without $CATXF after this (wall clock), s", 1.0, 600.0),
    ParameterSpec("max_tx_queue", 100, "transmit queue capacity, packets", 1, 10000),
    ParameterSpec("diagnostics_period_s", 1.0, "period of /diagnostics, s", 0.1, 60.0),
    ParameterSpec("modem_log_dir", "~/acomms_logs", "directory of pyacomms' NMEA log files"),
    ParameterSpec("modem_log_max_bytes", 10_000_000, "rotate the NMEA log file at this size, "
                  "bytes", 10_000, 10_000_000_000),
    ParameterSpec("modem_log_backup_count", 5, "rotated NMEA log files kept", 1, 1000),
)


def parse_modem_config(text: str) -> dict:
    """modem_config YAML to a flat {name: scalar} dict; ValueError with the reason."""
    try:
        value = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ValueError(f"modem_config is not YAML: {exc}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("modem_config must be a YAML mapping of name: value")
    result = {}
    for name, item in value.items():
        if isinstance(item, (dict, list)) or item is None:
            raise ValueError(f"modem_config[{name!r}] must be a scalar")
        if isinstance(item, bool):
            item = int(item)
        result[str(name)] = item
    return result


def check_parameters(values: dict, current: dict | None, active: bool) -> str | None:
    """Pure: may these merged candidate values be used? `current` are the accepted values, and
    link parameters may not change while the driver is active."""
    if values.get("modem_connection_type") not in CONNECTION_TYPES:
        return f"modem_connection_type must be one of {CONNECTION_TYPES}"
    reason = check_modem_profile(values)
    if reason:
        return reason
    try:
        config = parse_modem_config(str(values.get("modem_config", "{}")))
    except ValueError as exc:
        return str(exc)
    reason = _check_required_config(config) or _check_choices(values)
    if reason:
        return reason
    if values.get("reconnect_initial_s", 0) > values.get("reconnect_max_s", 1e9):
        return "reconnect_initial_s must not exceed reconnect_max_s"
    if current is not None and active:
        names = sorted(n for n in LINK_PARAMETERS if values.get(n) != current.get(n))
        if names:
            return f"{names} cannot change while active: deactivate, set, activate"
    return None


def _check_required_config(config: dict) -> str | None:
    """modem_config may not turn off what the driver depends on."""
    for name, value in config.items():
        required = REQUIRED_CONFIG.get(name)
        if required is not None and str(value) != required:
            return (f"modem_config[{name!r}] must be {required}: the driver needs it "
                    f"(required settings {REQUIRED_CONFIG})")
    return None


def _check_choices(values: dict) -> str | None:
    if values.get("partial_packet_mode", "ranges") not in PARTIAL_PACKET_MODES:
        return f"partial_packet_mode must be one of {PARTIAL_PACKET_MODES}"
    if values.get("modem_config_query", "ALL") not in CONFIG_QUERIES:
        return f"modem_config_query must be one of {CONFIG_QUERIES}"
    return None


def default_dest(values: dict) -> int:
    """Where a packet without a dest goes: default_modem_dest, or the profile's broadcast."""
    dest = values["default_modem_dest"]
    return dest if dest >= 0 else modem_profile(values["modem_profile"]).broadcast_address


def modem_config(values: dict) -> dict:
    """Every $CCCFG the driver sends on connection: the tx level, then modem_config."""
    return {TXLEVEL_CONFIG: values["pwramp_txlevel"],
            **parse_modem_config(values["modem_config"])}


def client_settings(values: dict, name: str) -> ClientSettings:
    def link_factory():
        return make_link(values["modem_connection_type"], serial_port=values["modem_serial_port"],
                         baud_rate=values["modem_baud_rate"],
                         remote_host=values["modem_remote_host"],
                         remote_port=values["modem_remote_port"],
                         local_host=values["modem_local_host"],
                         local_port=values["modem_local_port"])

    settings = ClientSettings(link_factory=link_factory, modem_config=modem_config(values),
                              log_dir=values["modem_log_dir"],
                              log_max_bytes=values["modem_log_max_bytes"],
                              log_backup_count=values["modem_log_backup_count"],
                              name="".join(c if c.isalnum() else "_" for c in name))
    update_settings(settings, values)
    return settings


def update_settings(settings: ClientSettings, values: dict) -> None:
    """The run-time settable parameters into the client's settings."""
    settings.profile = modem_profile(values["modem_profile"])
    settings.use_legacy_packets = values["use_legacy_packets"]
    settings.use_tdp = values["use_tdp"]
    settings.use_janus_packets = values["use_janus_packets"]
    settings.publish_partial_packets = values["publish_partial_packets"]
    settings.partial_packet_mode = values["partial_packet_mode"]
    settings.clock_skew_allowed_s = values["clock_skew_allowed_s"]
    settings.config_query = values["modem_config_query"]
    settings.query_clock = values["query_modem_clock"]
    settings.set_modem_time = values["set_modem_time"]
    settings.reconnect_initial_s = values["reconnect_initial_s"]
    settings.reconnect_max_s = values["reconnect_max_s"]
    settings.silence_timeout_s = values["modem_silence_timeout_s"]
    settings.handshake_timeout_s = values["handshake_timeout_s"]
    settings.tx_timeout_s = values["tx_timeout_s"]
    settings.max_tx_queue = values["max_tx_queue"]
