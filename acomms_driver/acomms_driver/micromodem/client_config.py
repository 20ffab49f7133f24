"""What the Micromodem client is configured with and reports through: settings, callbacks, results.

Shared by the link supervisor (`link_supervisor`) and the protocol adapter
(`micromodem_protocol`); ROS-free.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.profile import ModemProfile
from acomms_driver.micromodem.modem_link import ModemLink
from acomms_driver.micromodem.packet_rules import ModemPacket, PacketRules


@dataclasses.dataclass
class ReceivedModemPacket:
    packet: ModemPacket
    minibytes_valid: list[int]   # flat [start, end, start, end...] byte ranges that passed CRC
    databytes_valid: list[int]
    cst: dict | None             # nmea.parse_cst values of the CACST that closed the reception
    complete: bool               # every frame passed CRC


@dataclasses.dataclass
class PingResult:
    timed_out: bool
    reason: str = ""
    src: int = -1
    dest: int = -1
    one_way_travel_time: float = 0.0
    snr_in: float = 0.0
    snr_out: float = 0.0
    tx_level: int = 0
    timestamp_resolution: int = 0
    toa_mode: int = 0
    snv_on: int = 0
    timestamp: int = 0
    cst: dict | None = None


@dataclasses.dataclass
class ClientSettings:
    link_factory: Callable[[], ModemLink]
    modem_config: dict = dataclasses.field(default_factory=dict)  # name -> value, sent as $CCCFG
    set_modem_time: bool = False
    use_legacy_packets: bool = False
    use_tdp: bool = False
    use_janus_packets: bool = False
    publish_partial_packets: bool = True
    partial_packet_mode: str = "ranges"  # receptions.PARTIAL_PACKET_MODES
    clock_skew_allowed_s: float = 1.0
    config_query: str = "ALL"            # $CCCFQ,<this> after the handshake; "" = none
    query_clock: bool = True             # $CCTMQ after the handshake (clock offset, sources)
    log_max_bytes: int = 10_000_000
    log_backup_count: int = 5
    reconnect_initial_s: float = 0.5
    reconnect_max_s: float = 10.0
    silence_timeout_s: float = 30.0
    handshake_timeout_s: float = 2.0
    tx_timeout_s: float = 60.0
    max_tx_queue: int = 100
    log_dir: str = "~/acomms_logs"
    name: str = "modem"
    profile: ModemProfile = MICROMODEM2

    def packet_rules(self) -> PacketRules:
        return PacketRules(self.profile, self.use_legacy_packets, self.use_tdp,
                           self.use_janus_packets)


@dataclasses.dataclass
class ClientCallbacks:
    """Called from the client's threads; each must be quick and must not raise (exceptions are
    caught and counted as callback_errors)."""

    on_packet_rx: Callable[[ReceivedModemPacket], None] | None = None
    on_cst: Callable[[dict], None] | None = None
    on_xst: Callable[[dict], None] | None = None
    on_transmit: Callable[[ModemPacket, dict], None] | None = None
    on_nmea: Callable[[str], None] | None = None
    on_connection: Callable[[bool, str], None] | None = None
    on_log: Callable[[str, str], None] | None = None   # (level, message)
    on_ack: Callable[[dict], None] | None = None        # $CAACK: src, dest, frame_num, ack
    on_tx_failed: Callable[[ModemPacket, str], None] | None = None  # refused by the modem
    on_txf: Callable[[], None] | None = None            # $CATXF: a transmission ended
    on_reception_start: Callable[[dict], None] | None = None  # $CARXP: packet_type


class Notifier:
    """Calls the callbacks safely (a failing callback is counted and logged, never raised) and
    holds the counters both halves of the client report in /diagnostics."""

    def __init__(self, callbacks: ClientCallbacks | None = None):
        self.callbacks = callbacks or ClientCallbacks()
        self.counters: collections.Counter = collections.Counter()

    def call(self, name: str, *args) -> None:
        func = getattr(self.callbacks, name)
        if func is None:
            return
        try:
            func(*args)
        except Exception as exc:  # noqa: BLE001 - a callback bug must not kill the reader
            self.counters["callback_errors"] += 1
            self.log("error", f"callback {name} failed: {exc!r}")

    def log(self, level: str, message: str) -> None:
        if self.callbacks.on_log is not None:
            try:
                self.callbacks.on_log(level, message)
            except Exception:  # noqa: BLE001
                pass
