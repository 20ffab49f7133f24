"""ROS-free Micromodem client: pyacomms' `Micromodem` behind a fault-tolerant link supervisor.

What comes from pyacomms (acomms 3.1.1): sentence formatting (`write_nmea`), configuration tracking
(`CACFG` -> `id`, `fw_version`, `config_data`), FDP transmit sentences (`send_fdpacket`: `$CCTFP` /
`$CCTDP`), the legacy packet state machine (`$CCCYC` -> `$CACYC` -> `$CADRQ` -> `$CCTXD`), reception
assembly (`$CARFP`/`$CARDP`/`$CACYC`+`$CARXD` followed by `$CACST` -> FDPacket), pings
(`$CCCMD,PNG` and the `$CACMR,PNR` parser), clock setting (`$CCTMS`).

What is worked around, and how:
- pyacomms' connection classes are unusable for a robust driver (see modem_link); this module feeds
  `Micromodem._process_incoming_nmea` itself, from its own reader thread, and replaces
  `serial_tx_queue` by a writer that writes straight to the current link.
- Lines are validated by `nmea.NmeaReader` first; garbage and bad checksums are counted and never
  reach pyacomms (which would accept checksum-less lines).
- `fw_at_least()` blocks the reader thread for 1 s when the firmware version is unknown: the
  handshake queries `info` first and sets a fallback version if the modem does not say.
- pyacomms' state machine never starts its timeout timers and silently drops a packet handed over
  while not Idle: this client keeps its own transmit queue and in-flight packet, only hands a
  packet over when pyacomms is Idle, times transmissions out itself and resets pyacomms to Idle.
- `wait_for_fdp_ping_reply` attaches its CST queue only after the reply (a race that loses the
  CST): pings are matched here from the reply listener and the next CACST.
- CACST / CAXST are mapped by `nmea.parse_cst` / `parse_xst` (pyacomms mis-scales fractional
  seconds and drops packet-timeout CSTs).

Packets queued for transmit are never lost to a link fault: the in-flight packet goes back to the
head of the queue when the link drops before `$CATXF`, and is sent again after reconnection
(at-least-once; a packet whose CATXF was lost with the link can be sent twice).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable

import acomms.commstate
from acomms.flexibledataprotocol import FDPacket
from acomms.micromodem import Micromodem
from acomms.unifiedlog import UnifiedLog

from acomms_core.modems.modem_rates import FDP_MAX_MINIFRAME_BYTES, FDP_RATES, RATES
from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.modem_link import LinkError, ModemLink

# Packet.packet_type values (acomms_interfaces/msg/Packet.msg), repeated to keep this ROS-free.
PACKET_TYPE_UNKNOWN = -1
PACKET_TYPE_AUTO = 0
PACKET_TYPE_FSK = 1
PACKET_TYPE_LEGACY_PSK = 2
PACKET_TYPE_FDP = 3

FALLBACK_FIRMWARE_VERSION = "v3.0.0"


@dataclasses.dataclass
class ModemPacket:
    """A packet to send or a packet received (fields as in acomms_interfaces/msg/Packet)."""

    src: int = -1
    dest: int = -1
    packet_type: int = PACKET_TYPE_AUTO
    miniframe_rate: int = 1
    dataframe_rate: int = 1
    miniframe_bytes: bytes = b""
    dataframe_bytes: bytes = b""


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
    publish_partial_packets: bool = True
    reconnect_initial_s: float = 0.5
    reconnect_max_s: float = 10.0
    silence_timeout_s: float = 30.0
    handshake_timeout_s: float = 2.0
    tx_timeout_s: float = 60.0
    max_tx_queue: int = 100
    log_dir: str = "~/acomms_logs"
    name: str = "modem"


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


def validate_packet(packet: ModemPacket, use_legacy_packets: bool, use_tdp: bool) -> str | None:
    """Reason a packet cannot be sent as given, or None."""
    legacy = packet.packet_type in (PACKET_TYPE_FSK, PACKET_TYPE_LEGACY_PSK) or (
        use_legacy_packets and packet.packet_type in (PACKET_TYPE_AUTO, PACKET_TYPE_UNKNOWN))
    if packet.packet_type not in (PACKET_TYPE_UNKNOWN, PACKET_TYPE_AUTO, PACKET_TYPE_FSK,
                                  PACKET_TYPE_LEGACY_PSK, PACKET_TYPE_FDP):
        return f"unknown packet_type {packet.packet_type}"
    if not 0 <= packet.dest <= 255:
        return f"dest {packet.dest} outside 0..255"
    if legacy:
        rate = 0 if packet.packet_type == PACKET_TYPE_FSK else packet.dataframe_rate
        if rate not in RATES:
            return f"legacy dataframe_rate {rate} is not a Micromodem rate {sorted(RATES)}"
        if packet.packet_type == PACKET_TYPE_LEGACY_PSK and rate == 0:
            return "legacy PSK needs a PSK rate (1..6); rate 0 is FSK"
        if packet.miniframe_bytes:
            return "legacy packets carry no miniframe bytes"
        if not packet.dataframe_bytes:
            return "legacy packet without dataframe bytes"
        limit = RATES[rate].max_dataframe_bytes
        if len(packet.dataframe_bytes) > limit:
            return f"{len(packet.dataframe_bytes)} dataframe bytes > {limit} at legacy rate {rate}"
        return None
    if packet.dataframe_rate not in FDP_RATES:
        return f"FDP dataframe_rate {packet.dataframe_rate} not in {list(FDP_RATES)}"
    limit = RATES[packet.dataframe_rate].max_dataframe_bytes
    if len(packet.dataframe_bytes) > limit:
        return f"{len(packet.dataframe_bytes)} dataframe bytes > {limit} at rate " \
               f"{packet.dataframe_rate}"
    if use_tdp:
        if packet.miniframe_bytes:
            return "use_tdp is set: $CCTDP packets carry no miniframe bytes"
        return None
    if packet.miniframe_rate not in FDP_RATES:
        return f"FDP miniframe_rate {packet.miniframe_rate} not in {list(FDP_RATES)}"
    if len(packet.miniframe_bytes) > FDP_MAX_MINIFRAME_BYTES:
        return f"{len(packet.miniframe_bytes)} miniframe bytes > {FDP_MAX_MINIFRAME_BYTES}"
    return None


class _DirectWriter:
    """Stands in for Micromodem.serial_tx_queue: pyacomms' writes go straight to the link."""

    def __init__(self, client: MicromodemClient):
        self._client = client

    def put(self, item, block=True, timeout=None):
        self._client._write_raw(item)

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


class _PingWaiter:
    def __init__(self, dest: int):
        self.dest = dest
        self.reply = None
        self.cst = None
        self.replied = threading.Event()
        self.cst_arrived = threading.Event()


class MicromodemClient:
    """Owns the pyacomms Micromodem, the link and two threads (supervisor, reader)."""

    def __init__(self, settings: ClientSettings, callbacks: ClientCallbacks | None = None):
        self.settings = settings
        self.callbacks = callbacks or ClientCallbacks()
        self.counters = collections.Counter()
        self.reader = nmea.NmeaReader()
        self._lock = threading.RLock()
        self._tx_queue: collections.deque[ModemPacket] = collections.deque()
        self._in_flight: ModemPacket | None = None
        self._in_flight_since = 0.0
        self._awaiting_xst: ModemPacket | None = None
        self._ping: _PingWaiter | None = None
        self._link: ModemLink | None = None
        self._connected = False
        self._session_failed = threading.Event()
        self._session_reason = ""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._reader_thread: threading.Thread | None = None
        self._last_rx_monotonic = 0.0
        self._last_cst: dict | None = None
        self._last_reception_type = ""
        self._confirmed_config: dict[str, str] = {}
        self._config_event = threading.Event()
        self.last_reason = "not started"
        self.unconfirmed_config: list[str] = []

        log_dir = os.path.expanduser(settings.log_dir)
        os.makedirs(log_dir, exist_ok=True)
        rootname = f"acomms_driver.{settings.name}.{id(self):x}"
        self._unified_log = UnifiedLog(
            log_path=log_dir, rootname=rootname,
            file_name=f"pyacomms_{settings.name}_{time.strftime('%Y%m%dT%H%M%S')}.log")
        logging.getLogger(rootname).propagate = False  # pyacomms logs go to its file only
        self.modem = Micromodem(name=settings.name, unified_log=self._unified_log)
        self.modem.serial_tx_queue = _DirectWriter(self)
        self.modem.incoming_all_packet_queues.append(_PacketSink(self._on_pyacomms_packet))
        self.modem.ping_reply_listeners.append(self._on_ping_reply)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._stop.clear()
        self._supervisor = threading.Thread(target=self._supervise, name="micromodem-supervisor",
                                            daemon=True)
        self._supervisor.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the link and stop the threads. Queued packets stay queued."""
        self._stop.set()
        self._wake.set()
        self._session_failed.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout)
            self._supervisor = None

    def close(self) -> None:
        """stop() and release pyacomms' log file."""
        self.stop()
        root = logging.getLogger(self._unified_log._log.name)
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()

    # ------------------------------------------------------------------ public API
    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def modem_src(self) -> int:
        return int(self.modem.id)

    @property
    def firmware_version(self) -> str:
        return str(self.modem.fw_version or "")

    def last_sentence_age(self) -> float:
        if not self._last_rx_monotonic:
            return float("inf")
        return time.monotonic() - self._last_rx_monotonic

    def queue_length(self) -> int:
        with self._lock:
            return len(self._tx_queue) + (1 if self._in_flight is not None else 0)

    def queue_packet(self, packet: ModemPacket,
                     insert_at_head: bool = False) -> tuple[bool, int, str]:
        """Queue a packet for transmit: (accepted, position_in_queue, reason if refused)."""
        reason = validate_packet(packet, self.settings.use_legacy_packets, self.settings.use_tdp)
        if reason:
            self.counters["tx_refused_invalid"] += 1
            return False, -1, reason
        with self._lock:
            if len(self._tx_queue) >= self.settings.max_tx_queue:
                self.counters["tx_refused_queue_full"] += 1
                return False, -1, f"transmit queue full ({self.settings.max_tx_queue} packets)"
            if insert_at_head:
                self._tx_queue.appendleft(packet)
                position = 0
            else:
                self._tx_queue.append(packet)
                position = len(self._tx_queue) - 1
            self.counters["tx_queued"] += 1
        self._wake.set()
        return True, position, ""

    def send_sentence(self, text: str) -> str | None:
        """Send a raw sentence ('$CCCFQ,SRC' with or without checksum); reason if refused."""
        text = text.strip()
        if "*" in text:
            try:
                sentence = nmea.parse_line(text)
            except nmea.NmeaError as exc:
                return str(exc)
            line = nmea.format_sentence(sentence.type, sentence.fields)
        else:
            try:
                sentence = nmea.parse_line(f"{text}*{nmea.checksum(text.lstrip('$'))}")
            except (nmea.NmeaError, UnicodeEncodeError) as exc:
                return str(exc)
            line = nmea.format_sentence(sentence.type, sentence.fields)
        return None if self._write_raw(line) else "modem not connected"

    def set_config(self, name: str, value) -> bool:
        """Send $CCCFG,name,value now (False if not connected); re-sent on every reconnection."""
        self.settings.modem_config[str(name)] = value
        return self._write_raw(nmea.format_sentence("CCCFG", [name, value]))

    def ping(self, dest: int, rate: int = 1, cdr: int = 0, hexdata: bytes = b"",
             timeout: float = 5.0) -> PingResult:
        """Ping a remote modem ($CCCMD,PNG) and wait for its $CACMR,PNR (blocks up to timeout)."""
        if not 0 <= dest <= 255:
            return PingResult(True, f"dest {dest} outside 0..255")
        if cdr & 0b11000011:
            return PingResult(True, f"invalid cdr {cdr} for an FDP ping")
        if len(hexdata) > 32:
            return PingResult(True, f"ping payload {len(hexdata)} bytes > 32")
        deadline = time.monotonic() + max(1.0, timeout)
        waiter = _PingWaiter(dest)
        with self._lock:
            if self._ping is not None:
                return PingResult(True, "another ping is in progress")
            self._ping = waiter
        try:
            # The modem cannot ping while it transmits: wait for the in-flight packet.
            while self._in_flight is not None and time.monotonic() < deadline:
                time.sleep(0.05)
            if not self._connected:
                return PingResult(True, "modem not connected")
            if self._in_flight is not None:
                return PingResult(True, "modem busy transmitting until the timeout")
            self.counters["pings_sent"] += 1
            self.modem.send_fdp_ping(dest, rate, cdr, bytearray(hexdata))
            if not waiter.replied.wait(max(0.0, deadline - time.monotonic())):
                self.counters["ping_timeouts"] += 1
                return PingResult(True, "no reply before the timeout")
            waiter.cst_arrived.wait(1.0)  # the CACST of the reply follows it
            reply = waiter.reply
            return PingResult(
                False, "", src=_int(reply.get("src")), dest=_int(reply.get("dest")),
                one_way_travel_time=_float(reply.get("owtt")), snr_in=_float(reply.get("snr_in")),
                snr_out=_float(reply.get("snr_out")), tx_level=_int(reply.get("tx_level")),
                timestamp_resolution=_int(reply.get("timestamp_res")),
                toa_mode=_int(reply.get("toa_mode")), snv_on=_int(reply.get("snv_on")),
                timestamp=_int(reply.get("timestamp")), cst=waiter.cst)
        finally:
            with self._lock:
                self._ping = None
            self._wake.set()

    # ------------------------------------------------------------------ writing
    def _write_raw(self, line: str) -> bool:
        link = self._link
        if link is None or not link.is_open:
            self.counters["sentences_dropped_disconnected"] += 1
            return False
        try:
            link.write(line.encode("ascii", errors="replace"))
        except LinkError as exc:
            self.counters["sentences_dropped_disconnected"] += 1
            self._fail_session(str(exc))
            return False
        self.counters["sentences_written"] += 1
        return True

    # ------------------------------------------------------------------ supervisor
    def _supervise(self) -> None:
        backoff = self.settings.reconnect_initial_s
        while not self._stop.is_set():
            ok = self._run_session()
            if self._stop.is_set():
                break
            backoff = self.settings.reconnect_initial_s if ok else min(
                backoff * 2, self.settings.reconnect_max_s)
            self._log("warn", f"modem link down ({self.last_reason}); reconnecting in "
                              f"{backoff:.1f} s")
            self._stop.wait(backoff)

    def _run_session(self) -> bool:
        """One connection: open, handshake, serve until it fails. True if it got connected."""
        self._session_failed.clear()
        self._session_reason = ""
        try:
            link = self.settings.link_factory()
            link.open()
        except (LinkError, ValueError) as exc:
            self.counters["connect_failures"] += 1
            self.last_reason = str(exc)
            return False
        self.reader.reset()
        self._link = link
        self._last_rx_monotonic = 0.0
        self._reader_thread = threading.Thread(target=self._read_loop, args=(link,),
                                               name="micromodem-reader", daemon=True)
        self._reader_thread.start()
        got_connected = False
        try:
            reason = self._handshake()
            if reason:
                self.counters["handshake_failures"] += 1
                self.last_reason = reason
                return False
            got_connected = True
            self._set_connected(True, f"connected to {link.description}")
            self._serve()
            self.last_reason = self._session_reason or "stopped"
        finally:
            self._connected = False
            self._session_failed.set()  # stops the reader before its link is closed
            self._reader_thread.join(2.0)
            link.close()
            self._link = None
            with self._lock:
                if self._in_flight is not None:
                    # Not confirmed sent: back to the head of the queue for the next connection.
                    self._tx_queue.appendleft(self._in_flight)
                    self._in_flight = None
                    self.counters["tx_requeued_after_link_loss"] += 1
            self._reset_pyacomms_state()
            if got_connected:
                self.counters["disconnects"] += 1
                self._set_connected(False, self.last_reason)
        return got_connected

    def _fail_session(self, reason: str) -> None:
        if not self._session_failed.is_set():
            self._session_reason = reason
            self._session_failed.set()
            self._wake.set()

    def _wait_session(self, seconds: float) -> bool:
        """Sleep unless the session fails or the client stops; True if still fine."""
        return not self._session_failed.wait(seconds) and not self._stop.is_set()

    def _handshake(self) -> str | None:
        """Query SRC, TAT and firmware, set the clock, send modem_config; reason on failure."""
        timeout = self.settings.handshake_timeout_s
        self.modem.id = -1
        for _ in range(3):
            self.modem.get_config_param("SRC")
            end = time.monotonic() + timeout
            while self.modem.id < 0 and time.monotonic() < end:
                if not self._wait_session(0.02):
                    return self._session_reason or "stopped"
            if self.modem.id >= 0:
                break
        else:
            return "modem silent: no reply to $CCCFQ,SRC"
        self.modem.get_config_param("TAT")  # turn-around time, reported with ping replies
        self.modem.fw_version = None
        self.modem.get_config_param("info")
        end = time.monotonic() + timeout
        while not self.modem.fw_version and time.monotonic() < end:
            if not self._wait_session(0.02):
                return self._session_reason or "stopped"
        if not self.modem.fw_version:
            self.modem.fw_version = FALLBACK_FIRMWARE_VERSION
            self._log("warn", f"modem did not report info.firmware_version; assuming "
                              f"{FALLBACK_FIRMWARE_VERSION}")
        if self.settings.set_modem_time:
            self.modem.set_time(ignore_response=True)
        config = {str(k): str(v) for k, v in self.settings.modem_config.items()}
        with self._lock:
            self._confirmed_config = {}
        for name, value in config.items():
            self.modem.set_config(name, value, response_timeout=0)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                missing = [n for n in config if n not in self._confirmed_config]
            if not missing:
                break
            if not self._wait_session(0.02):
                return self._session_reason or "stopped"
        self.unconfirmed_config = missing if config else []
        if self.unconfirmed_config:
            self.counters["config_unconfirmed"] += len(self.unconfirmed_config)
            self._log("warn", f"modem did not confirm $CCCFG for {self.unconfirmed_config}")
        return None

    def _serve(self) -> None:
        probe_sent = False
        while not self._stop.is_set() and not self._session_failed.is_set():
            self._wake.wait(0.2)
            self._wake.clear()
            if self._session_failed.is_set() or self._stop.is_set():
                return
            silence = self.last_sentence_age()
            limit = self.settings.silence_timeout_s
            if silence > limit:
                self.counters["silence_timeouts"] += 1
                self._fail_session(f"modem silent for {silence:.1f} s")
                return
            if silence > limit / 2:
                if not probe_sent:
                    probe_sent = True
                    self.counters["silence_probes"] += 1
                    self.modem.get_config_param("SRC")
            else:
                probe_sent = False
            self._pump_tx()

    def _pump_tx(self) -> None:
        with self._lock:
            if self._in_flight is not None:
                if time.monotonic() - self._in_flight_since > self.settings.tx_timeout_s:
                    self.counters["tx_timeouts"] += 1
                    self._log("error", "no $CATXF for the packet in flight within tx_timeout; "
                                       "dropping it")
                    self._in_flight = None
                    self._reset_pyacomms_state()
                else:
                    return
            if self._ping is not None or not self._tx_queue or not self._connected:
                return
            packet = self._tx_queue.popleft()
            self._in_flight = packet
            self._in_flight_since = time.monotonic()
        if not isinstance(self.modem.state, acomms.commstate.Idle):
            self._reset_pyacomms_state()
        self._send_packet(packet)

    def _send_packet(self, packet: ModemPacket) -> None:
        settings = self.settings
        legacy = packet.packet_type in (PACKET_TYPE_FSK, PACKET_TYPE_LEGACY_PSK) or (
            settings.use_legacy_packets
            and packet.packet_type in (PACKET_TYPE_AUTO, PACKET_TYPE_UNKNOWN))
        if legacy:
            rate = 0 if packet.packet_type == PACKET_TYPE_FSK else packet.dataframe_rate
            self.modem.send_packet_data(packet.dest, bytearray(packet.dataframe_bytes),
                                        rate_num=rate, ack=False)
        else:
            fdpacket = FDPacket(self.modem.id, packet.dest, packet.miniframe_rate,
                                packet.dataframe_rate, 0, minibytes=packet.miniframe_bytes,
                                databytes=packet.dataframe_bytes)
            self.modem.send_fdpacket(fdpacket, settings.use_tdp)
        self.counters["tx_handed_to_modem"] += 1

    def _reset_pyacomms_state(self) -> None:
        if not isinstance(self.modem.state, acomms.commstate.Idle):
            self.counters["pyacomms_state_resets"] += 1
            self.modem._changestate(acomms.commstate.Idle)

    def _set_connected(self, connected: bool, reason: str) -> None:
        self._connected = connected
        self.counters["connects" if connected else "connection_lost_reports"] += 1
        self._log("info" if connected else "warn", reason)
        self._call(self.callbacks.on_connection, connected, reason)
        self._wake.set()

    # ------------------------------------------------------------------ reading
    def _read_loop(self, link: ModemLink) -> None:
        while not self._stop.is_set() and not self._session_failed.is_set():
            try:
                data = link.read(0.2)
            except LinkError as exc:
                self._fail_session(str(exc))
                return
            if data:
                for sentence in self.reader.feed(data):
                    self._handle_sentence(sentence)

    def _handle_sentence(self, sentence: nmea.Sentence) -> None:
        self._last_rx_monotonic = time.monotonic()
        self._call(self.callbacks.on_nmea, sentence.raw)
        kind = sentence.type
        try:
            if kind == "CACST":
                self._handle_cst(sentence)
            elif kind == "CAXST":
                self._handle_xst(sentence)
            elif kind == "CACFG" and len(sentence.fields) >= 2:
                with self._lock:
                    self._confirmed_config[sentence.fields[0]] = sentence.fields[1]
            elif kind in ("CARFP", "CARDP", "CACYC", "CARXD"):
                self._last_reception_type = kind
        except nmea.NmeaError as exc:
            self.counters["unparseable_sentences"] += 1
            self._log("warn", f"{kind}: {exc}")
        try:
            # pyacomms catches its own parser errors; this guards against anything else.
            self.modem._process_incoming_nmea(sentence.raw + "\r\n")
        except Exception as exc:  # noqa: BLE001 - a parser bug must not kill the reader
            self.counters["pyacomms_errors"] += 1
            self._log("warn", f"pyacomms failed on {kind}: {exc!r}")
        if kind == "CATXF":
            self._handle_txf()

    def _handle_cst(self, sentence: nmea.Sentence) -> None:
        cst = nmea.parse_cst(sentence.fields)
        self.counters["cst"] += 1
        self._last_cst = cst
        with self._lock:
            waiter = self._ping
        if waiter is not None and waiter.reply is not None and waiter.cst is None:
            waiter.cst = cst
            waiter.cst_arrived.set()
        self._call(self.callbacks.on_cst, cst)

    def _handle_xst(self, sentence: nmea.Sentence) -> None:
        xst = nmea.parse_xst(sentence.fields)
        self.counters["xst"] += 1
        self._call(self.callbacks.on_xst, xst)
        with self._lock:
            packet = self._awaiting_xst or self._in_flight
            self._awaiting_xst = None
        if packet is not None:
            self._call(self.callbacks.on_transmit, packet, xst)

    def _handle_txf(self) -> None:
        with self._lock:
            packet = self._in_flight
            if packet is None:
                return
            legacy = isinstance(self.modem.state, acomms.commstate.Idle)
            fdp = self._sent_as_fdp(packet)
            if fdp or legacy:
                self._in_flight = None
                self._awaiting_xst = packet
                self.counters["tx_sent"] += 1
        self._wake.set()

    def _sent_as_fdp(self, packet: ModemPacket) -> bool:
        return not (packet.packet_type in (PACKET_TYPE_FSK, PACKET_TYPE_LEGACY_PSK) or (
            self.settings.use_legacy_packets
            and packet.packet_type in (PACKET_TYPE_AUTO, PACKET_TYPE_UNKNOWN)))

    def _on_ping_reply(self, ping, msg) -> None:
        with self._lock:
            waiter = self._ping
        if waiter is None or ping.get("dest") != self.modem.id:
            self.counters["ping_replies_unmatched"] += 1
            return
        waiter.reply = dict(ping)
        waiter.replied.set()

    def _on_pyacomms_packet(self, fdpacket) -> None:
        """An FDP or legacy reception completed by its CACST (called in the reader thread)."""
        try:
            received = self._convert_reception(fdpacket)
        except Exception as exc:  # noqa: BLE001 - a malformed reception is counted, not fatal
            self.counters["rx_unconvertible"] += 1
            self._log("warn", f"could not convert a reception: {exc!r}")
            return
        if not received.complete:
            self.counters["rx_partial"] += 1
            if not self.settings.publish_partial_packets:
                self.counters["rx_partial_dropped"] += 1
                return
        self.counters["rx_packets"] += 1
        self._call(self.callbacks.on_packet_rx, received)

    def _convert_reception(self, fdpacket) -> ReceivedModemPacket:
        kind = self._last_reception_type
        if kind in ("CARFP", "CARDP"):
            packet_type = PACKET_TYPE_FDP
        else:
            packet_type = PACKET_TYPE_FSK if fdpacket.dataframe_rate == 0 else \
                PACKET_TYPE_LEGACY_PSK
        good = True
        parts = []
        for frames in (fdpacket.miniframes, fdpacket.dataframes):
            kept = bytearray()
            for frame in frames:
                # Keep only the good prefix: bytes after a bad frame would shift the codec.
                good = good and bool(frame.crccheck) and frame.crccheck != -2
                if good:
                    kept += bytes(frame.data)
            parts.append(bytes(kept))
        complete = all(bool(f.crccheck) for f in fdpacket.miniframes) and all(
            bool(f.crccheck) for f in fdpacket.dataframes) and good
        mini, data = parts
        packet = ModemPacket(
            src=int(fdpacket.src), dest=int(fdpacket.dest), packet_type=packet_type,
            miniframe_rate=int(fdpacket.miniframe_rate or 0),
            dataframe_rate=int(fdpacket.dataframe_rate or 0),
            miniframe_bytes=mini, dataframe_bytes=data)
        return ReceivedModemPacket(packet, [0, len(mini)] if mini else [],
                                   [0, len(data)] if data else [], self._last_cst, complete)

    # ------------------------------------------------------------------ helpers
    def _call(self, func, *args) -> None:
        if func is None:
            return
        try:
            func(*args)
        except Exception as exc:  # noqa: BLE001 - a callback bug must not kill the reader
            self.counters["callback_errors"] += 1
            try:
                self._log("error", f"callback {getattr(func, '__name__', func)} failed: {exc!r}")
            except Exception:  # noqa: BLE001
                pass

    def _log(self, level: str, message: str) -> None:
        if self.callbacks.on_log is not None:
            try:
                self.callbacks.on_log(level, message)
            except Exception:  # noqa: BLE001
                pass


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
