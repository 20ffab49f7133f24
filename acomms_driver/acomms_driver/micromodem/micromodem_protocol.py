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
- `$CAREV` never reaches pyacomms: any revision report resets its state machine to Idle, so a
  heartbeat between `$CACYC` and `$CADRQ` lost the legacy transmit. `$CAREV,...,INIT` (a reboot) is
  handled here: the packet in flight goes back to the head of the queue and the handshake runs
  again (`session_setup`).
- pyacomms ignores `$CAERR`: here it is recorded (`modem_status`) and a transmit the modem refused
  is released at once instead of blocking the queue until `tx_timeout_s`.
- pyacomms sets the clock with a doubled 'Z' and ignores `$CATMS`: `session_setup` does it.
- pyacomms' NMEA log file never rotates: its handler is replaced by a rotating one.
- pyacomms mis-parses `$CACDR` (FDP acknowledgements) and its JANUS reception path cannot work
  (`$CAJRX` / `$CATJN`): those sentences never reach it; `acks` and `janus` parse them here.
- Transmit queues (PPS / TXTRIG) and JANUS are not in pyacomms: the adapter writes `$CCTFP`
  (firmware >= 2.1.9 form, the queue in its leading field) and `$CCTJN` itself.
- Any exception while handling one sentence costs that sentence only (counted).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading
import time

import acomms.commstate
from acomms.flexibledataprotocol import FDPacket
from acomms.messageparams import CycleInfo, DataFrame
from acomms.messageparams import Packet as PyacommsPacket
from acomms.micromodem import Micromodem
from acomms.unifiedlog import UnifiedLog

from acomms_driver.micromodem import acks, janus, nmea
from acomms_driver.micromodem.client_config import ClientSettings, Notifier
from acomms_driver.micromodem.config_query import ConfigQueries
from acomms_driver.micromodem.link_supervisor import LinkSupervisor
from acomms_driver.micromodem.modem_status import TRANSMIT_COMMANDS, ModemStatus
from acomms_driver.micromodem.packet_rules import ModemPacket
from acomms_driver.micromodem.pings import PingTracker
from acomms_driver.micromodem.receptions import (
    RECEPTION_SENTENCES,
    convert_janus,
    convert_reception,
)
from acomms_driver.micromodem.session_setup import FALLBACK_FIRMWARE_VERSION, SessionSetup
from acomms_driver.micromodem.transmit_queue import TransmitQueue
from acomms_driver.micromodem.transponders import TransponderPinger

__all__ = ["FALLBACK_FIRMWARE_VERSION", "MicromodemProtocol"]
# Sentences pyacomms must not see (see the module docstring).
_NOT_FOR_PYACOMMS = ("CAREV", "CACDR", "CAJRX", "CATJN")


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


def make_rotating_log(settings: ClientSettings, owner: object) -> tuple[UnifiedLog, Micromodem]:
    """pyacomms' Micromodem with its log file rotated at settings.log_max_bytes."""
    log_dir = os.path.expanduser(settings.log_dir)
    os.makedirs(log_dir, exist_ok=True)
    rootname = f"acomms_driver.{settings.name}.{id(owner):x}"
    unified_log = UnifiedLog(
        log_path=log_dir, rootname=rootname,
        file_name=f"pyacomms_{settings.name}_{time.strftime('%Y%m%dT%H%M%S')}.log")
    logger = logging.getLogger(rootname)
    logger.propagate = False  # pyacomms logs go to its file only
    plain = unified_log._file_handler
    rotating = logging.handlers.RotatingFileHandler(
        unified_log.log_file_name, maxBytes=settings.log_max_bytes,
        backupCount=settings.log_backup_count)
    rotating.setLevel(plain.level)
    rotating.setFormatter(plain.formatter)
    logger.removeHandler(plain)
    plain.close()
    logger.addHandler(rotating)
    unified_log._file_handler = rotating
    return unified_log, Micromodem(name=settings.name, unified_log=unified_log)


class MicromodemProtocol:
    """pyacomms state, transmit (FDP / TDP / legacy), receptions, pings, CST / XST, the modem's
    own reports (errors, reboots, clock)."""

    def __init__(self, settings: ClientSettings, notifier: Notifier):
        self.settings = settings
        self.notifier = notifier
        self.counters = notifier.counters
        self.link: LinkSupervisor | None = None  # set by attach()
        self._lock = threading.RLock()
        # pyacomms' state machine is driven from two threads: the link thread hands it a packet
        # (it writes $CCCYC, then enters WaitingForCacyc) and the reader thread feeds it replies.
        # Without one lock a fast $CACYC/$CADRQ is handled in Idle and the cycle is lost.
        # Order: this lock, then self._lock (never the other way round).
        self._pyacomms_lock = threading.RLock()
        self.tx = TransmitQueue(self._lock, self.counters)
        self.status = ModemStatus()
        self.setup = SessionSetup(self)
        self._last_cst: dict | None = None
        self._last_reception_type = ""
        self._janus_rx: janus.JanusReception | None = None  # awaiting its $CACST
        self.config_queries = ConfigQueries()
        self._unified_log, self.modem = make_rotating_log(settings, self)
        self.modem.serial_tx_queue = _DirectWriter(self.write)
        self.modem.incoming_all_packet_queues.append(_PacketSink(self._on_pyacomms_packet))
        self.pings = PingTracker(self.modem, self.tx, self._lock, self.counters)
        self.transponders = TransponderPinger(self)
        self._handlers = {
            "CACST": self._handle_cst, "CAXST": self._handle_xst, "CACFG": self._handle_cfg,
            "CAERR": self._handle_error, "CAREV": self._handle_revision,
            "CATMS": self._handle_clock_reply, "CATMQ": self._handle_clock_query,
            "CAACK": self._handle_ack, "CACDR": self._handle_ack,
            "CATMG": self._handle_clock_sources, "CAJRX": self._handle_janus_reception,
            "CARXP": self._handle_rxp, "SNTTA": self.transponders.on_sntta}

    @property
    def unconfirmed_config(self) -> list[str]:
        return self.setup.unconfirmed_config

    def attach(self, link: LinkSupervisor) -> None:
        self.link = link
        self.pings.link = link

    def close_log(self) -> None:
        """Release pyacomms' log file."""
        root = logging.getLogger(self._unified_log._log.name)
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()

    def write(self, line: str) -> bool:
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
        return self.write(nmea.format_sentence("CCCFG", [name, value]))

    # ------------------------------------------------------------------ Session
    def handshake(self) -> str | None:
        """Identity, required settings, modem_config, clock, parameter list; reason on failure."""
        return self.setup.run()

    def probe(self) -> None:
        self.modem.get_config_param("SRC")

    def tick(self) -> None:
        """Time the packet in flight out; hand the next one to pyacomms unless a ping runs."""
        if self.tx.expire_in_flight(self.settings.tx_timeout_s):
            self.notifier.log("error", "no $CATXF for the packet in flight within tx_timeout; "
                                       "dropping it")
            self._reset_pyacomms_state()
        with self._lock:
            if (self.pings.active or self.transponders.active or not self.link.connected
                    or self.link.handshake_pending):
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
        with self._pyacomms_lock:
            self._send_packet_locked(packet)

    def _send_packet_locked(self, packet: ModemPacket) -> None:
        rules = self.settings.packet_rules()
        kind = self.tx.in_flight_kind = rules.kind(packet)
        # Sent at its CATXF (a legacy cycle: once pyacomms is back to Idle).
        self.tx.in_flight_fdp = kind != "legacy"
        if kind == "janus":
            self.write(nmea.format_sentence("CCTJN", janus.tjn_fields(
                packet.dest, packet.ack, packet.dataframe_bytes)))
        elif packet.triggered:  # the firmware >= 2.1.9 form, the queue in its leading field
            self.write(nmea.format_sentence("CCTFP", [
                packet.queue, 0, packet.dest, packet.miniframe_rate, packet.dataframe_rate,
                int(packet.ack), 0, packet.miniframe_bytes.hex(), packet.dataframe_bytes.hex()]))
        elif kind == "legacy":
            self._send_legacy(packet, rules.legacy_rate(packet))
        else:
            fdpacket = FDPacket(self.modem.id, packet.dest, packet.miniframe_rate,
                                packet.dataframe_rate, int(packet.ack),
                                minibytes=packet.miniframe_bytes,
                                databytes=packet.dataframe_bytes)
            self.modem.send_fdpacket(fdpacket, rules.use_tdp)
        self.counters["tx_handed_to_modem"] += 1
        if packet.triggered:
            self.counters["tx_triggered"] += 1

    def _send_legacy(self, packet: ModemPacket, rate: int) -> None:
        """A legacy cycle through pyacomms' state machine, framed by the modem profile
        (pyacomms' own send_packet_data never sets the cycle's ack flag)."""
        size = self.settings.profile.rate_info(rate).frame_bytes
        data = packet.dataframe_bytes
        frames = [DataFrame(self.modem.id, packet.dest, packet.ack, number, data[i:i + size])
                  for number, i in enumerate(range(0, len(data), size))]
        cycle = CycleInfo(self.modem.id, packet.dest, rate, packet.ack, len(frames))
        self.modem.send_packet(PyacommsPacket(cycle, frames))

    def _reset_pyacomms_state(self) -> None:
        with self._pyacomms_lock:
            if not isinstance(self.modem.state, acomms.commstate.Idle):
                self.counters["pyacomms_state_resets"] += 1
                self.modem._changestate(acomms.commstate.Idle)

    # ------------------------------------------------------------------ receiving
    def handle_sentence(self, sentence: nmea.Sentence) -> None:
        """One validated sentence; whatever goes wrong costs this sentence only (counted)."""
        kind = sentence.type
        self.status.count(kind)
        self.notifier.call("on_nmea", sentence.raw)
        handler = self._handlers.get(kind)
        try:
            if handler is not None:
                handler(sentence)
            elif kind in RECEPTION_SENTENCES:
                self._last_reception_type = kind
        except Exception as exc:  # noqa: BLE001 - one bad sentence must not cost the link
            self._sentence_failed("unparseable_sentences", kind, exc)
        if kind not in _NOT_FOR_PYACOMMS:
            try:
                # pyacomms catches its own parser errors; this guards against anything else.
                with self._pyacomms_lock:
                    self.modem._process_incoming_nmea(sentence.xor_line)
            except Exception as exc:  # noqa: BLE001 - a parser bug must not kill the reader
                self._sentence_failed("pyacomms_errors", kind, exc)
        if kind == "CATXF":
            self._handle_txf()

    def _sentence_failed(self, counter: str, kind: str, exc: Exception) -> None:
        self.counters[counter] += 1
        self.link_reader_error(f"{kind}: {exc!r}"[:200])

    def link_reader_error(self, text: str) -> None:
        if self.link is not None:
            self.link.reader.last_error = text

    def _handle_cst(self, sentence: nmea.Sentence) -> None:
        cst = nmea.parse_cst(sentence.fields)
        self.counters["cst"] += 1
        self._last_cst = cst
        self.status.on_cst_clock(cst.get("toa_mode", 0))
        self.pings.on_cst(cst)
        self.notifier.call("on_cst", cst)
        reception, self._janus_rx = self._janus_rx, None
        if reception is not None:
            self._publish_reception(convert_janus(reception, cst))

    def _handle_rxp(self, sentence: nmea.Sentence) -> None:
        self.counters["rxp"] += 1
        self.notifier.call("on_reception_start", nmea.parse_rxp(sentence.fields))

    def _handle_janus_reception(self, sentence: nmea.Sentence) -> None:
        reception = janus.parse_jrx(sentence.fields)
        self.counters["rx_janus"] += 1
        if not reception.header_ok:  # src / dest cannot be trusted: nothing to publish
            self.counters["rx_janus_bad_header"] += 1
            return
        self._janus_rx = reception

    def _handle_xst(self, sentence: nmea.Sentence) -> None:
        xst = nmea.parse_xst(sentence.fields)
        self.counters["xst"] += 1
        self.notifier.call("on_xst", xst)
        packet = self.tx.take_transmitted()
        if packet is not None:
            self.notifier.call("on_transmit", packet, xst)

    def _handle_cfg(self, sentence: nmea.Sentence) -> None:
        if len(sentence.fields) >= 2:
            self.setup.on_config_echo(sentence.fields[0], sentence.fields[1])
            self.config_queries.on_config(sentence.fields[0], sentence.fields[1])

    def query_config(self, param: str, timeout_s: float) -> tuple[str | None, str]:
        """$CCCFQ,param and its $CACFG replies: (value, reason if none)."""
        return self.config_queries.query(
            param, lambda name: self.write(nmea.format_sentence("CCCFQ", [name])), timeout_s)

    def _handle_error(self, sentence: nmea.Sentence) -> None:
        error = self.status.on_error(sentence.fields)
        self.notifier.log("warn", f"modem error: {error}")
        with self._lock:
            commands = TRANSMIT_COMMANDS.get(self.tx.in_flight_kind, ())
            if not self.tx.busy or not error.names_command(commands):
                return
            packet = self.tx.reject_in_flight()
        self._reset_pyacomms_state()
        self.notifier.log("error", f"modem refused the packet to {packet.dest} "
                                   f"({len(packet.dataframe_bytes)} data bytes): {error}")
        self.notifier.call("on_tx_failed", packet, str(error))
        if self.link is not None:
            self.link.wake()

    def _handle_revision(self, sentence: nmea.Sentence) -> None:
        if not self.status.on_revision(sentence.fields):
            return  # a heartbeat: nothing to do (and pyacomms never sees it)
        if self.link is not None:  # first: no packet is handed over before the handshake
            self.link.request_handshake("modem rebooted")
        with self._lock:
            requeued = self.tx.requeue_in_flight("tx_requeued_after_reboot")
        self._reset_pyacomms_state()
        self.notifier.log("warn", "modem rebooted ($CAREV INIT): handshake again" + (
            "; the packet in flight will be sent again" if requeued else ""))

    def _handle_clock_reply(self, sentence: nmea.Sentence) -> None:
        self.status.on_clock_reply(sentence.fields, time.time(),
                                   self.settings.clock_skew_allowed_s)

    def _handle_clock_query(self, sentence: nmea.Sentence) -> None:
        self.status.on_clock_query(sentence.fields, time.time())

    def _handle_clock_sources(self, sentence: nmea.Sentence) -> None:
        self.status.on_clock_query(sentence.fields, None)

    def _handle_ack(self, sentence: nmea.Sentence) -> None:
        parse = acks.parse_caack if sentence.type == "CAACK" else acks.parse_cacdr
        values = parse(sentence.fields)
        self.counters["acks"] += 1
        self.notifier.call("on_ack", values)

    def _handle_txf(self) -> None:
        # An FDP packet is sent at its CATXF; a legacy cycle once pyacomms is back to Idle.
        with self._pyacomms_lock, self._lock:
            if self.tx.in_flight_fdp or isinstance(self.modem.state, acomms.commstate.Idle):
                self.tx.mark_sent()
        self.notifier.call("on_txf")
        if self.link is not None:
            self.link.wake()

    def _on_pyacomms_packet(self, fdpacket) -> None:
        """An FDP or legacy reception completed by its CACST (called in the reader thread)."""
        try:
            received = convert_reception(fdpacket, self._last_reception_type, self._last_cst,
                                         self.settings.partial_packet_mode)
        except Exception as exc:  # noqa: BLE001 - a malformed reception is counted, not fatal
            self.counters["rx_unconvertible"] += 1
            self.notifier.log("warn", f"could not convert a reception: {exc!r}")
            return
        self._publish_reception(received)

    def _publish_reception(self, received) -> None:
        if not received.complete:
            self.counters["rx_partial"] += 1
            if not self.settings.publish_partial_packets:
                self.counters["rx_partial_dropped"] += 1
                return
        self.counters["rx_packets"] += 1
        self.notifier.call("on_packet_rx", received)
