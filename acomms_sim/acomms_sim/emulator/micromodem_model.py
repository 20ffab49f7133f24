"""ROS-free model of a WHOI Micromodem's NMEA interface, with a pluggable acoustic backend.

`MicromodemModel` takes host sentences (`handle_line`) and produces modem sentences (`output`
callback), like the modem on the far end of its serial port:

- configuration: `$CCCFG,name,value` -> `$CACFG,name,value`; `$CCCFQ,name|group|ALL` -> `$CACFG`s
- clock: `$CCTMS,time,mode` -> `$CATMS,0,time`; `$CCTMQ` -> `$CATMQ`
- FDP transmit: `$CCTFP` (7- or 9-field form) / `$CCTDP` -> on-air time -> `$CATXF`, `$CAXST`;
  transmit queues (PPS, TXTRIG), acknowledgements, JANUS and clock sources: `transmit_options`
- legacy transmit: `$CCCYC` -> `$CACYC` echo, then `$CADRQ` / `$CCTXD` per frame -> `$CATXF`,
  `$CAXST`
  (rate 0/FSK first reports the cycle-init `$CATXF`)
- receptions: `$CARXP,<packet type>` when the backend detects a packet that is still arriving
  (the simulated channel does: `detected`; off with `RXP` 0), then `$CARFP` (FDP), `$CARDP` (TDP),
  `$CACYC` + `$CARXD` (legacy; `$CAMSG,BAD_CRC` for a bad frame), each followed by `$CACST`
- pings: `$CCCMD,PNG,...` -> `$CACMD` echo; the remote model reports `$CACMA,PNG` and answers after
  its turn-around time (TAT); the pinger reports `$CACMR,PNR` with the one-way travel time, then
  `$CACST`
- anything else valid -> `$CAERR`; bad checksum -> `$CAERR,...,NMEA,...`

Where transmissions go is decided by an `AcousticBackend`. `LoopbackBackend` connects models in one
process directly (fixed delay, optional per-frame errors); a backend for the simulated acoustic
channel implements the same three methods. The model is promiscuous: it reports every packet it
decodes, whatever its destination, as ros_acomms' dispatch expects.
"""

from __future__ import annotations

import abc
import collections
import threading
import time
from collections.abc import Callable

from acomms_core.modems.profile import PACKET_TYPE_AUTO
from acomms_driver.micromodem import nmea
from acomms_sim.emulator.session_sentences import _hhmmss, _SessionSentences
from acomms_sim.emulator.transmission import (  # noqa: F401 (re-exported)
    BANDWIDTH_HZ,
    CARRIER_HZ,
    PROFILE,
    AcousticTransmission,
    Reception,
)
from acomms_sim.emulator.transmit_options import _TransmitOptions
from acomms_sim.modem.fields import CST_TYPE_FDP, CST_TYPE_FSK, CST_TYPE_PSK

DEFAULT_FIRMWARE_VERSION = "v3.0.4-emulator"


def cst_packet_type(transmission: AcousticTransmission) -> int:
    """The CST / XST / $CARXP packet type of a transmission (-1: JANUS, unknown here)."""
    if transmission.kind == "legacy":
        return CST_TYPE_FSK if transmission.dataframe_rate == 0 else CST_TYPE_PSK
    return -1 if transmission.kind == "janus" else CST_TYPE_FDP


class AcousticBackend(abc.ABC):
    """Carries transmissions between models. Deliver by calling `receiver.deliver(reception)`
    at the time the reception ends (start + travel time + duration)."""

    @abc.abstractmethod
    def attach(self, modem: MicromodemModel) -> None: ...

    @abc.abstractmethod
    def detach(self, modem: MicromodemModel) -> None: ...

    @abc.abstractmethod
    def transmit(self, sender: MicromodemModel, transmission: AcousticTransmission) -> None: ...


FrameErrorFn = Callable[["MicromodemModel", AcousticTransmission],
                        "tuple[list[bool] | None, list[bool] | None]"]


class LoopbackBackend(AcousticBackend):
    """Every attached model hears every other after a fixed delay; optional frame errors."""

    def __init__(self, delay_s: float = 0.0, snr_in_db: float = 20.0,
                 frame_errors: FrameErrorFn | None = None):
        self.delay_s = delay_s
        self.snr_in_db = snr_in_db
        self.frame_errors = frame_errors
        self._modems: list[MicromodemModel] = []
        self._timers: set[threading.Timer] = set()
        self._lock = threading.Lock()

    def attach(self, modem: MicromodemModel) -> None:
        with self._lock:
            if modem not in self._modems:
                self._modems.append(modem)

    def detach(self, modem: MicromodemModel) -> None:
        with self._lock:
            if modem in self._modems:
                self._modems.remove(modem)

    def transmit(self, sender: MicromodemModel, transmission: AcousticTransmission) -> None:
        with self._lock:
            receivers = [m for m in self._modems if m is not sender]
        for receiver in receivers:
            mini_ok, data_ok = (self.frame_errors(receiver, transmission)
                                if self.frame_errors else (None, None))
            reception = Reception(transmission, self.delay_s, snr_in_db=self.snr_in_db,
                                  snr_out_db=self.snr_in_db - 5.0, miniframe_ok=mini_ok,
                                  dataframe_ok=data_ok)
            wait = max(0.0, transmission.start_time + self.delay_s + transmission.duration_s
                       - time.time())
            timer = threading.Timer(wait, self._deliver, (receiver, reception))
            timer.daemon = True
            with self._lock:
                self._timers.add(timer)
            timer.start()

    def _deliver(self, receiver: MicromodemModel, reception: Reception) -> None:
        with self._lock:
            self._timers = {t for t in self._timers if t.is_alive()}
        receiver.deliver(reception)

    def close(self) -> None:
        with self._lock:
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()


class _ReceptionSentences:
    """What the modem reports about a decoded data packet: $CARFP / $CARDP / $CACYC + $CARXD
    (or $CAMSG,BAD_CRC), then $CACST. Part of MicromodemModel (uses its emit and _sequence)."""

    _sequence: int

    def emit(self, sentence_type: str, fields=()) -> None:
        raise NotImplementedError

    def _cst(self, reception: Reception, mode: int, packet_type: int, rate: int,
             num_frames: int, bad_frames: int, data_rate: int = -1, num_data: int = -1,
             bad_data: int = -1) -> None:
        tx = reception.transmission
        self._sequence += 1
        self.emit("CACST", nmea.format_cst({
            "mode": mode, "toa": tx.start_time + reception.travel_time_s,
            "toa_mode": self.clock_status(),
            "mfd_peak": 1200, "mfd_pow": int(reception.snr_in_db + 40),
            "mfd_ratio": int(reception.snr_in_db * 10), "mfd_spl": int(reception.noise_db
                                                                     + reception.snr_in_db),
            "agn": 250, "rate_num": rate, "src": tx.src, "dest": tx.dest,
            "psk_error": 0 if mode == 0 else 3, "packet_type": packet_type,
            "num_frames": num_frames, "bad_frames_num": bad_frames,
            "snr_rss": int(reception.noise_db + reception.snr_in_db),
            "snr_in": reception.snr_in_db, "snr_out": reception.snr_out_db, "snr_sym": 0.0,
            "mse": -10.0, "dqf": 0, "dop": 0.0, "noise": reception.noise_db,
            "carrier": tx.carrier_hz, "bandwidth": tx.bandwidth_hz,
            "sequence_number": self._sequence, "data_rate": data_rate,
            "num_data_frames": num_data, "num_bad_data_frames": bad_data}))

    @staticmethod
    def _flags(ok: list[bool] | None, count: int) -> list[bool]:
        return [True] * count if ok is None else [bool(x) for x in (list(ok) + [True] * count)[
            :count]]

    def _receive_fdp(self, reception: Reception) -> None:
        tx = reception.transmission
        frames = tx.dataframes()
        mini_ok = self._flags(reception.miniframe_ok, 1 if tx.miniframe_bytes else 0)
        data_ok = self._flags(reception.dataframe_ok, len(frames))
        miniframes = nmea.format_frames(zip(mini_ok, [tx.miniframe_bytes] if mini_ok else [],
                                            strict=True))
        dataframes = nmea.format_frames(zip(data_ok, frames, strict=True))
        self.emit("CARFP", [nmea.format_compact_time(time.time()), self._sequence + 1, tx.src,
                            tx.dest, tx.miniframe_rate, tx.dataframe_rate, int(tx.ack), 0, "",
                            miniframes, dataframes])
        bad_mini, bad_data = mini_ok.count(False), data_ok.count(False)
        self._cst(reception, 0 if not (bad_mini or bad_data) else 1, CST_TYPE_FDP,
                  tx.miniframe_rate, len(mini_ok), bad_mini, tx.dataframe_rate, len(frames),
                  bad_data)
        self._acknowledge(reception, mini_ok, data_ok)

    def _receive_tdp(self, reception: Reception) -> None:
        tx = reception.transmission
        frames = tx.dataframes()
        data_ok = self._flags(reception.dataframe_ok, len(frames))
        self.emit("CARDP", [tx.src, tx.dest, tx.dataframe_rate, int(tx.ack), 0,
                            nmea.format_frames(zip(data_ok, frames, strict=True))])
        bad = data_ok.count(False)
        self._cst(reception, 0 if not bad else 1, CST_TYPE_FDP, tx.dataframe_rate, 0, 0,
                  tx.dataframe_rate, len(frames), bad)
        self._acknowledge(reception, [], data_ok)

    def _receive_legacy(self, reception: Reception) -> None:
        tx = reception.transmission
        frames = tx.dataframes()
        data_ok = self._flags(reception.dataframe_ok, len(frames))
        self.emit("CACYC", [0, tx.src, tx.dest, tx.dataframe_rate, int(tx.ack), len(frames)])
        for number, (ok, frame) in enumerate(zip(data_ok, frames, strict=True), start=1):
            if ok:
                self.emit("CARXD", [tx.src, tx.dest, int(tx.ack), number, frame.hex().upper()])
            else:
                self.emit("CAMSG", ["BAD_CRC", number])
        bad = data_ok.count(False)
        self._cst(reception, 0 if not bad else 1,
                  CST_TYPE_FSK if tx.dataframe_rate == 0 else CST_TYPE_PSK,
                  tx.dataframe_rate, len(frames), bad)
        self._acknowledge(reception, [], data_ok)


class MicromodemModel(_SessionSentences, _ReceptionSentences, _TransmitOptions):
    """The modem's NMEA behaviour. Thread-safe; timers for on-air time and turn-around."""

    def __init__(self, src: int, backend: AcousticBackend | None = None,
                 airtime_scale: float = 1.0, firmware_version: str = DEFAULT_FIRMWARE_VERSION,
                 config: dict | None = None):
        self.config: dict[str, str] = {
            "SRC": str(src), "TAT": "50", "CTO": "10", "BR1": "3", "BW0": str(BANDWIDTH_HZ),
            "FC0": str(CARRIER_HZ), "pwramp.txlevel": "3", "xmit.txinhibit": "1",
            "info.firmware_version": firmware_version, "info.modem_type": "uModem2 emulator",
            "hwd.batt_v": "24.10", "hwd.temp": "21.50", "pwramp.temperature_degC": "25.00",
            "pwramp.vbat": "24.00", "pwramp.vtransmit": "48.00", "CST": "1", "XST": "1",
            "REV": "1", "RXP": "1",
        }
        self.config.update({str(k): str(v) for k, v in (config or {}).items()})
        self._init_session()
        self._init_transmit_options()
        self.airtime_scale = airtime_scale
        self.output: Callable[[str], None] = lambda line: None
        self.muted = False  # a muted modem neither answers nor reports (the "silent modem")
        self.host_sentences: collections.deque[str] = collections.deque(maxlen=1000)
        self.counters = collections.Counter()
        self._lock = threading.RLock()
        self._busy_until = 0.0
        self._legacy: dict | None = None
        self._ping_pending: dict | None = None
        self._sequence = 0
        self._timers: set[threading.Timer] = set()
        self.backend = backend
        if backend is not None:
            backend.attach(self)

    @property
    def src(self) -> int:
        return int(self.config.get("SRC", "0"))

    def close(self) -> None:
        if self.backend is not None:
            self.backend.detach(self)
        with self._lock:
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()

    # ------------------------------------------------------------------ output helpers
    def emit(self, sentence_type: str, fields=()) -> None:
        if self.muted:
            self.counters["muted_output"] += 1
            return
        if self.silenced(sentence_type):
            self.counters["silenced_output"] += 1
            return
        self.counters["sentences_out"] += 1
        self.output(self.format_output(sentence_type, fields))

    def _later(self, seconds: float, func, *args) -> None:
        timer = threading.Timer(max(0.0, seconds), self._run_timer, (func, args))
        timer.daemon = True
        with self._lock:
            self._timers = {t for t in self._timers if t.is_alive()}
            self._timers.add(timer)
        timer.start()

    def _run_timer(self, func, args) -> None:
        try:
            func(*args)
        except Exception as exc:  # noqa: BLE001 - report, never kill the timer thread silently
            self.counters["internal_errors"] += 1
            self._error("EMULATOR", 99, f"internal error {exc!r}")

    def _error(self, module: str, number: int, text: str) -> None:
        self.counters["errors_reported"] += 1
        text = "".join(c if 0x20 <= ord(c) < 0x7F and c not in ",$*" else " " for c in text)
        self.emit("CAERR", [_hhmmss(), module, number, text[:80]])

    # ------------------------------------------------------------------ host input
    def handle_line(self, line: str | bytes) -> None:
        """One line from the host (driver)."""
        try:
            sentence = nmea.parse_line(line)
        except nmea.ChecksumError as exc:
            self.counters["host_bad_checksum"] += 1
            self._error("NMEA", 1, f"bad checksum: {exc}")
            return
        except nmea.NmeaError:
            self.counters["host_malformed"] += 1
            return
        if self.muted:
            self.counters["muted_input"] += 1
            return
        self.counters["host_sentences"] += 1
        self.host_sentences.append(sentence.raw)
        if self.refused_on_demand(sentence.type):
            return
        handler = getattr(self, "_on_" + sentence.type, None)
        if handler is None:
            self.counters["host_unknown"] += 1
            self._error("NMEA", 2, f"unsupported sentence {sentence.type}")
            return
        try:
            with self._lock:
                handler(list(sentence.fields))
        except (ValueError, IndexError, KeyError) as exc:
            self.counters["host_bad_fields"] += 1
            self._error(sentence.type[2:], 3, f"bad fields: {exc}")

    def _on_CCCFG(self, fields) -> None:
        name, value = fields[0], fields[1]
        if not name:
            raise ValueError("empty parameter name")
        self.config[name] = value
        self.emit("CACFG", [name, value])

    def _on_CCCFQ(self, fields) -> None:
        name = fields[0] if fields else "ALL"
        if name in self.config:
            self.emit("CACFG", [name, self.config[name]])
            return
        if name in ("ALL", "TOP"):
            names = list(self.config)
        else:
            names = [k for k in self.config if k.startswith(name + ".")]
        if not names:
            self._error("CFQ", 4, f"unknown parameter {name}")
            return
        for key in names:
            self.emit("CACFG", [key, self.config[key]])

    def _on_CCTFP(self, fields) -> None:
        queue = 0
        if len(fields) >= 9:  # firmware >= 2.1.9 form: two leading fields, the first the queue
            queue, fields = int(fields[0] or 0), fields[2:]
        dest, mini_rate, data_rate, ack = (int(f) for f in fields[:4])
        mini, data = bytes.fromhex(fields[5]), bytes.fromhex(fields[6])
        sizes = (mini_rate, data_rate, len(mini), len(data))
        duration = PROFILE.packet_duration_s(True, *sizes)  # refuses non-FDP rates
        PROFILE.check_packet(True, *sizes)
        self._transmit_from_queue(queue, AcousticTransmission(
            "fdp", self.src, dest, 0.0, duration, mini_rate, data_rate, mini, data,
            ack=bool(ack)))

    def _on_CCTDP(self, fields) -> None:
        dest, rate, ack = int(fields[0]), int(fields[1]), int(fields[2])
        data = bytes.fromhex(fields[4])
        if not PROFILE.is_fdp(PACKET_TYPE_AUTO, rate):
            raise ValueError(f"rate {rate} is not an FDP rate")
        PROFILE.check_packet(True, rate, rate, 0, len(data))
        # a TDP packet is a dataframe without a miniframe
        self._transmit(AcousticTransmission("tdp", self.src, dest, 0.0,
                                            PROFILE.rate_info(rate).dataframe_duration_s, 0,
                                            rate, b"", data, ack=bool(ack)))

    def _on_CCCYC(self, fields) -> None:
        _, src, dest, rate, ack, num_frames = (int(f) for f in fields[:6])
        info = PROFILE.rate_info(rate)
        if not 1 <= num_frames <= info.frames:
            raise ValueError(f"{num_frames} frames at rate {rate}")
        self.emit("CACYC", [0, src, dest, rate, ack, num_frames])
        if self.heartbeat_mid_cycle:
            self.emit_revision("AUV")
        self._legacy = {"src": src, "dest": dest, "rate": rate, "ack": ack,
                        "num_frames": num_frames, "frames": []}
        if rate == 0:
            self.emit("CATXF", [0])  # FSK: the cycle-init minipacket goes out first
        self._request_frame()

    def _request_frame(self) -> None:
        cycle = self._legacy
        frame_num = len(cycle["frames"]) + 1
        self.emit("CADRQ", [_hhmmss(), cycle["src"], cycle["dest"], cycle["ack"],
                            PROFILE.rate_info(cycle["rate"]).frame_bytes, frame_num])

    def _on_CCTXD(self, fields) -> None:
        cycle = self._legacy
        if cycle is None:
            raise ValueError("$CCTXD without a $CCCYC")
        data = bytes.fromhex(fields[3])
        if len(data) > PROFILE.rate_info(cycle["rate"]).frame_bytes:
            raise ValueError("frame longer than the rate's frame size")
        cycle["frames"].append(data)
        if len(cycle["frames"]) < cycle["num_frames"]:
            self._request_frame()
            return
        self._legacy = None
        info = PROFILE.rate_info(cycle["rate"])
        duration = PROFILE.packet_duration_s(False, 0, cycle["rate"], 0,
                                             len(cycle["frames"]) * info.frame_bytes)
        self._transmit(AcousticTransmission(
            "legacy", cycle["src"], cycle["dest"], 0.0, duration, 0, cycle["rate"],
            frames=cycle["frames"], dataframe_bytes=b"".join(cycle["frames"]),
            ack=bool(cycle["ack"])))

    def _on_CCCMD(self, fields) -> None:
        if fields[0] != "PNG":
            raise ValueError(f"unsupported command {fields[0]}")
        src, dest, rate = int(fields[1]), int(fields[2]), int(fields[3])
        cdr = int(fields[4]) if len(fields) > 4 and fields[4] else 0
        payload = bytes.fromhex(fields[5]) if len(fields) > 5 and fields[5] else b""
        self.emit("CACMD", ["PNG", src, dest, rate, cdr, payload.hex().upper()])
        self._ping_pending = {"dest": dest, "sent": time.time()}
        fdp_rate = rate in PROFILE.rates and PROFILE.rate_info(rate).fdp
        duration = PROFILE.rate_info(rate if fdp_rate else 1).miniframe_duration_s
        self._transmit(AcousticTransmission("ping", self.src, dest, 0.0, duration, rate, 0,
                                            payload), report=False)

    # ------------------------------------------------------------------ transmit
    def _transmit(self, transmission: AcousticTransmission, report: bool = True,
                  start_time: float | None = None) -> None:
        """start_time: the PPS edge a held packet starts on (not the late timer's now)."""
        now = time.time()
        if now < self._busy_until or self._held is not None:  # held: a PPS / TXTRIG packet
            self.counters["tx_refused_busy"] += 1
            raise ValueError("modem is already transmitting")
        transmission.start_time = now if start_time is None else min(start_time, now)
        duration = transmission.duration_s * self.airtime_scale
        transmission.duration_s = duration
        self._busy_until = now + duration
        self.counters[f"tx_{transmission.kind}"] += 1
        if self.backend is not None:
            self.backend.transmit(self, transmission)
        if report:
            self._later(duration, self._transmit_done, transmission)

    def _transmit_done(self, transmission: AcousticTransmission) -> None:
        self.emit("CATXF", [len(transmission.dataframe_bytes) + len(transmission.miniframe_bytes)])
        frames = transmission.dataframes()
        packet_type = cst_packet_type(transmission)
        self.emit("CAXST", nmea.format_xst({
            "time": transmission.start_time, "toa_mode": self.clock_status(), "mode": 0,
            "probe_length": 20,
            "bandwidth": transmission.bandwidth_hz, "carrier": transmission.carrier_hz,
            "rate_num": transmission.miniframe_rate or transmission.dataframe_rate,
            "src": transmission.src, "dest": transmission.dest, "ack": int(transmission.ack),
            "num_frames_expected": len(frames), "num_frames_sent": len(frames),
            "packet_type": packet_type,
            "nbytes": len(transmission.dataframe_bytes) + len(transmission.miniframe_bytes),
            "actual_carrier": transmission.carrier_hz}))

    # ------------------------------------------------------------------ receive
    def detected(self, transmission: AcousticTransmission) -> None:
        """Called by the backend when the receiver detected (locked onto) a packet that is
        still arriving: `$CARXP` with its packet type."""
        if self.muted:
            return
        self.counters["rx_detected"] += 1
        self.emit("CARXP", [cst_packet_type(transmission)])

    def deliver(self, reception: Reception) -> None:
        """Called by the backend when a transmission has fully arrived here."""
        if self.muted:
            self.counters["muted_receptions"] += 1
            return
        tx = reception.transmission
        with self._lock:
            self.counters[f"rx_{tx.kind}"] += 1
            handler = getattr(self, "_receive_" + tx.kind, None)
            if handler is None:  # another modem family on the channel (e.g. an EvoLogics S2C)
                self.counters["rx_foreign"] += 1
                return
            handler(reception)

    def _receive_ping(self, reception: Reception) -> None:
        tx = reception.transmission
        if tx.dest != self.src:
            return
        arrival = tx.start_time + reception.travel_time_s
        self.emit("CACMA", ["PNG", nmea.format_iso_time(arrival), tx.src, tx.dest,
                            f"{reception.snr_in_db:.2f}", f"{reception.snr_out_db:.2f}",
                            self.config.get("pwramp.txlevel", "3"), 0, 0])
        turnaround = float(self.config.get("TAT", "50")) / 1000.0
        reply = AcousticTransmission("ping_reply", self.src, tx.src, 0.0,
                                     tx.duration_s / max(self.airtime_scale, 1e-9),
                                     tx.miniframe_rate, 0,
                                     ping_out_travel_s=reception.travel_time_s)
        self._later(turnaround, self._send_ping_reply, reply)

    def _send_ping_reply(self, reply: AcousticTransmission) -> None:
        with self._lock:
            try:
                self._transmit(reply, report=False)
            except ValueError:
                self.counters["ping_reply_skipped_busy"] += 1

    def _receive_ping_reply(self, reception: Reception) -> None:
        tx = reception.transmission
        if tx.dest != self.src or self._ping_pending is None:
            return
        self._ping_pending = None
        owtt = (tx.ping_out_travel_s + reception.travel_time_s) / 2.0
        arrival = tx.start_time + reception.travel_time_s
        self.emit("CACMR", ["PNR", nmea.format_iso_time(arrival), tx.src, tx.dest,
                            f"{owtt:.6f}", f"{reception.snr_in_db:.2f}",
                            f"{reception.snr_out_db:.2f}",
                            self.config.get("pwramp.txlevel", "3"), 0,
                            f"0;0;0;{int(arrival * 1000) % 4294967296}"])
        self._cst(reception, 0, CST_TYPE_FDP, tx.miniframe_rate or 1, 1, 0)
