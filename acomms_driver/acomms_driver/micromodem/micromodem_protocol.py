"""The Micromodem protocol adapter: pyacomms' `Micromodem` driven as a link supervisor's session.

What comes from pyacomms (acomms 3.1.1): sentence formatting (`write_nmea`), configuration tracking
(`CACFG` -> `id`, `fw_version`, `config_data`), FDP transmit sentences (`send_fdpacket`: `$CCTFP` /
`$CCTDP`), the legacy packet state machine (`$CCCYC` -> `$CACYC` -> `$CADRQ` -> `$CCTXD`), reception
assembly (`$CARFP`/`$CARDP`/`$CACYC`+`$CARXD` followed by `$CACST` -> FDPacket), pings
(`$CCCMD,PNG` and the `$CACMR,PNR` parser), clock setting (`$CCTMS`).

What is worked around, and how:
- pyacomms' connection classes are unusable for a robust driver (see modem_link): this adapter
  feeds `Micromodem._process_incoming_nmea` from the supervisor's reader thread, and replaces
  `serial_tx_queue` by a writer that writes straight to the current link.
- Lines are validated by `nmea.NmeaReader` first (in the supervisor); garbage and bad checksums
  never reach pyacomms (which would accept checksum-less lines).
- `fw_at_least()` blocks the reader thread for 1 s when the firmware version is unknown: the
  handshake queries `info` first and sets a fallback version if the modem does not say.
- pyacomms' state machine never starts its timeout timers and silently drops a packet handed over
  while not Idle: the adapter keeps its own transmit queue (`transmit_queue`), only hands a packet
  over when pyacomms is Idle, times transmissions out itself and resets pyacomms to Idle.
- `wait_for_fdp_ping_reply` attaches its CST queue only after the reply (a race that loses the
  CST): pings are matched here from the reply listener and the next CACST (`pings`).
- CACST / CAXST are mapped by `nmea.parse_cst` / `parse_xst` (pyacomms mis-scales fractional
  seconds and drops packet-timeout CSTs).
"""

from __future__ import annotations

import logging
import os
import threading
import time

import acomms.commstate
from acomms.flexibledataprotocol import FDPacket
from acomms.micromodem import Micromodem
from acomms.unifiedlog import UnifiedLog

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.client_config import ClientSettings, Notifier
from acomms_driver.micromodem.link_supervisor import LinkSupervisor
from acomms_driver.micromodem.packet_rules import ModemPacket
from acomms_driver.micromodem.pings import PingTracker
from acomms_driver.micromodem.receptions import RECEPTION_SENTENCES, convert_reception
from acomms_driver.micromodem.transmit_queue import TransmitQueue

FALLBACK_FIRMWARE_VERSION = "v3.0.0"
HANDSHAKE_ATTEMPTS = 3


class _DirectWriter:
    """Stands in for Micromodem.serial_tx_queue: pyacomms' writes go straight to the link."""

    def __init__(self, write):
        self._write = write

    def put(self, item, block=True, timeout=None):
        self._write(item)

    put_nowait = put

    def empty(self) -> bool:
        return True

    def get_nowait(self):
        import queue
        raise queue.Empty


class _PacketSink:
    """Stands in for a queue in Micromodem.incoming_all_packet_queues: handles packets in-line."""

    def __init__(self, handler):
        self.put_nowait = handler


class MicromodemProtocol:
    """pyacomms state, transmit (FDP / TDP / legacy), receptions, pings, CST / XST."""

    def __init__(self, settings: ClientSettings, notifier: Notifier):
        self.settings = settings
        self.notifier = notifier
        self.counters = notifier.counters
        self.link: LinkSupervisor | None = None  # set by attach()
        self._lock = threading.RLock()
        self.tx = TransmitQueue(self._lock, self.counters)
        self._last_cst: dict | None = None
        self._last_reception_type = ""
        self._confirmed_config: dict[str, str] = {}
        self.unconfirmed_config: list[str] = []
        self._unified_log, self.modem = self._make_modem(settings)
        self.modem.incoming_all_packet_queues.append(_PacketSink(self._on_pyacomms_packet))
        self.pings = PingTracker(self.modem, self.tx, self._lock, self.counters)

    def _make_modem(self, settings: ClientSettings) -> tuple[UnifiedLog, Micromodem]:
        log_dir = os.path.expanduser(settings.log_dir)
        os.makedirs(log_dir, exist_ok=True)
        rootname = f"acomms_driver.{settings.name}.{id(self):x}"
        unified_log = UnifiedLog(
            log_path=log_dir, rootname=rootname,
            file_name=f"pyacomms_{settings.name}_{time.strftime('%Y%m%dT%H%M%S')}.log")
        logging.getLogger(rootname).propagate = False  # pyacomms logs go to its file only
        modem = Micromodem(name=settings.name, unified_log=unified_log)
        modem.serial_tx_queue = _DirectWriter(self._write)
        return unified_log, modem

    def attach(self, link: LinkSupervisor) -> None:
        self.link = link
        self.pings.link = link

    def close_log(self) -> None:
        """Release pyacomms' log file."""
        root = logging.getLogger(self._unified_log._log.name)
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()

    def _write(self, line: str) -> bool:
        return self.link is not None and self.link.write_line(line)

    # ------------------------------------------------------------------ transmit API
    def queue_packet(self, packet: ModemPacket,
                     insert_at_head: bool = False) -> tuple[bool, int, str]:
        """Queue a packet for transmit: (accepted, position_in_queue, reason if refused)."""
        reason = self.settings.packet_rules().check(packet)
        if reason:
            self.counters["tx_refused_invalid"] += 1
            return False, -1, reason
        result = self.tx.push(packet, insert_at_head, self.settings.max_tx_queue)
        if result[0] and self.link is not None:
            self.link.wake()
        return result

    def set_config(self, name: str, value) -> bool:
        """Send $CCCFG,name,value now (False if not connected); re-sent on every reconnection."""
        self.settings.modem_config[str(name)] = value
        return self._write(nmea.format_sentence("CCCFG", [name, value]))

    # ------------------------------------------------------------------ Session
    def handshake(self) -> str | None:
        """Query SRC, TAT and firmware, set the clock, send modem_config; reason on failure."""
        reason = self._query_identity()
        if reason:
            return reason
        if self.settings.set_modem_time:
            self.modem.set_time(ignore_response=True)
        self._send_config()
        return None

    def _query_identity(self) -> str | None:
        wait_for, timeout = self.link.wait_for, self.settings.handshake_timeout_s
        self.modem.id = -1
        for _ in range(HANDSHAKE_ATTEMPTS):
            self.modem.get_config_param("SRC")
            if wait_for(lambda: self.modem.id >= 0, timeout):
                break
        else:
            return "modem silent: no reply to $CCCFQ,SRC"
        self.modem.get_config_param("TAT")  # turn-around time, reported with ping replies
        self.modem.fw_version = None
        self.modem.get_config_param("info")
        if not wait_for(lambda: bool(self.modem.fw_version), timeout):
            self.modem.fw_version = FALLBACK_FIRMWARE_VERSION
            self.notifier.log("warn", f"modem did not report info.firmware_version; assuming "
                                      f"{FALLBACK_FIRMWARE_VERSION}")
        return None

    def _send_config(self) -> None:
        config = {str(k): str(v) for k, v in self.settings.modem_config.items()}
        with self._lock:
            self._confirmed_config = {}
        for name, value in config.items():
            self.modem.set_config(name, value, response_timeout=0)

        def missing() -> list[str]:
            with self._lock:
                return [n for n in config if n not in self._confirmed_config]

        self.link.wait_for(lambda: not missing(), self.settings.handshake_timeout_s)
        self.unconfirmed_config = missing()
        if self.unconfirmed_config:
            self.counters["config_unconfirmed"] += len(self.unconfirmed_config)
            self.notifier.log("warn",
                              f"modem did not confirm $CCCFG for {self.unconfirmed_config}")

    def probe(self) -> None:
        self.modem.get_config_param("SRC")

    def tick(self) -> None:
        """Time the packet in flight out; hand the next one to pyacomms unless a ping runs."""
        if self.tx.expire_in_flight(self.settings.tx_timeout_s):
            self.notifier.log("error", "no $CATXF for the packet in flight within tx_timeout; "
                                       "dropping it")
            self._reset_pyacomms_state()
        with self._lock:
            if self.pings.active or not self.link.connected:
                return
            packet = self.tx.start_next()
        if packet is None:
            return
        self._reset_pyacomms_state()
        self._send_packet(packet)

    def end_session(self) -> None:
        self.tx.requeue_in_flight()
        self._reset_pyacomms_state()

    def _send_packet(self, packet: ModemPacket) -> None:
        rules = self.settings.packet_rules()
        fdp = self.tx.in_flight_fdp = rules.sends_fdp(packet)
        if fdp:
            fdpacket = FDPacket(self.modem.id, packet.dest, packet.miniframe_rate,
                                packet.dataframe_rate, 0, minibytes=packet.miniframe_bytes,
                                databytes=packet.dataframe_bytes)
            self.modem.send_fdpacket(fdpacket, rules.use_tdp)
        else:
            self.modem.send_packet_data(packet.dest, bytearray(packet.dataframe_bytes),
                                        rate_num=rules.legacy_rate(packet), ack=False)
        self.counters["tx_handed_to_modem"] += 1

    def _reset_pyacomms_state(self) -> None:
        if not isinstance(self.modem.state, acomms.commstate.Idle):
            self.counters["pyacomms_state_resets"] += 1
            self.modem._changestate(acomms.commstate.Idle)

    # ------------------------------------------------------------------ receiving
    def handle_sentence(self, sentence: nmea.Sentence) -> None:
        self.notifier.call("on_nmea", sentence.raw)
        kind = sentence.type
        try:
            if kind == "CACST":
                self._handle_cst(sentence)
            elif kind == "CAXST":
                self._handle_xst(sentence)
            elif kind == "CACFG" and len(sentence.fields) >= 2:
                with self._lock:
                    self._confirmed_config[sentence.fields[0]] = sentence.fields[1]
            elif kind in RECEPTION_SENTENCES:
                self._last_reception_type = kind
        except nmea.NmeaError as exc:
            self.counters["unparseable_sentences"] += 1
            self.notifier.log("warn", f"{kind}: {exc}")
        try:
            # pyacomms catches its own parser errors; this guards against anything else.
            self.modem._process_incoming_nmea(sentence.raw + "\r\n")
        except Exception as exc:  # noqa: BLE001 - a parser bug must not kill the reader
            self.counters["pyacomms_errors"] += 1
            self.notifier.log("warn", f"pyacomms failed on {kind}: {exc!r}")
        if kind == "CATXF":
            self._handle_txf()

    def _handle_cst(self, sentence: nmea.Sentence) -> None:
        cst = nmea.parse_cst(sentence.fields)
        self.counters["cst"] += 1
        self._last_cst = cst
        self.pings.on_cst(cst)
        self.notifier.call("on_cst", cst)

    def _handle_xst(self, sentence: nmea.Sentence) -> None:
        xst = nmea.parse_xst(sentence.fields)
        self.counters["xst"] += 1
        self.notifier.call("on_xst", xst)
        packet = self.tx.take_transmitted()
        if packet is not None:
            self.notifier.call("on_transmit", packet, xst)

    def _handle_txf(self) -> None:
        # An FDP packet is sent at its CATXF; a legacy cycle once pyacomms is back to Idle.
        with self._lock:
            if self.tx.in_flight_fdp or isinstance(self.modem.state, acomms.commstate.Idle):
                self.tx.mark_sent()
        if self.link is not None:
            self.link.wake()

    def _on_pyacomms_packet(self, fdpacket) -> None:
        """An FDP or legacy reception completed by its CACST (called in the reader thread)."""
        try:
            received = convert_reception(fdpacket, self._last_reception_type, self._last_cst)
        except Exception as exc:  # noqa: BLE001 - a malformed reception is counted, not fatal
            self.counters["rx_unconvertible"] += 1
            self.notifier.log("warn", f"could not convert a reception: {exc!r}")
            return
        if not received.complete:
            self.counters["rx_partial"] += 1
            if not self.settings.publish_partial_packets:
                self.counters["rx_partial_dropped"] += 1
                return
        self.counters["rx_packets"] += 1
        self.notifier.call("on_packet_rx", received)
