"""ROS-free model of an EvoLogics S2C modem's AT interface on an acoustic backend.

`EvologicsModel` reads host bytes (`feed`) with the protocol's own framer
(`acomms_driver.evologics.at_stream`) and writes modem bytes (`output` callback), like the modem
at the far end of its serial port or TCP socket 9200. Implemented:

- `AT*SENDIM,<len>,<dest>,<ack|noack>,<data>` (<= 64 B) -> `OK`, then the message goes on the
  air; an acknowledged one to a unicast address ends in `DELIVEREDIM,<dest>` when the remote's
  acknowledgement arrives or `FAILEDIM,<dest>` after `ack_timeout_s`
- `AT*SEND,<len>,<dest>,<data>` (<= 1024 B, burst) -> `OK`, then `DELIVERED,<len>,<dest>` /
  `FAILED,<len>,<dest>` the same way (unicast bursts are always acknowledged)
- while transmitting or waiting for an acknowledgement: `BUSY TRANSMITTING` / `BUSY DELIVERING`
  (half duplex; one message in flight, as the modem's single instant-message slot)
- receptions addressed to this modem or to 255: `RECVIM` / `RECV` with duration, RSSI,
  integrity and propagation time from the backend's reception; an acknowledged instant message
  or burst is acknowledged automatically
- USBL (`usbl` error model given): every packet it decodes from a remote (acknowledgements too)
  yields `USBLLONG` and `USBLANGLES` with the true relative position (`relative_position`
  callable, e.g. `SimChannelBackend.relative_enu`) plus the model's errors; the head is taken as
  level and north-aligned (X/Y/Z = E/N/U, roll = pitch = yaw = 0)
- settings: `AT?AL` / `AT!AL<addr>` (re-attaches to the backend under the new address, which
  needs its own position there), `AT?AM`,
  `AT!L<0-3>` / `AT?L` source level, `AT@ZX<0|1>` extended notifications (`SENDSTART`,
  `SENDEND`, `RECVSTART` when the receiver locks onto an arrival, `RECVEND`), `AT?S`,
  `AT?T` (the one-way travel time, µs, of the last acknowledgement that completed a delivery:
  the channel's propagation time, i.e. true slant range / sound speed on a straight path;
  0 before the first delivery), `ATO` (data mode: replies and notifications framed
  `+++AT<cmd>:<len>:...`), `+++ATC` back to command mode
- anything else: `ERROR WRONG FORMAT`; malformed bytes are counted by the reader, never raised.

RSSI and integrity are modelling assumptions: RSSI = received level (SNR + band noise, dB re
1 µPa) - 200 dB; integrity = clamp(50 + 10 * SNR, 0, 255). The channel's frame errors use the
Micromodem FER tables of rate 1 (instant messages) and rate 5 (bursts) for lack of published
S2C curves (see `acomms_core.modems.evologics_s2c` for durations).
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable

from acomms_core.modems import evologics_s2c as s2c
from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.at_stream import AtStreamReader
from acomms_sim.emulator.transmission import AcousticTransmission, Reception
from acomms_sim.emulator.usbl_errors import UsblErrorModel

RelativePosition = Callable[[int, int], "tuple[float, float, float] | None"]
MAX_ADDRESS = 254


class EvologicsModel:
    """An emulated S2C modem (see the module docstring)."""

    profile = s2c.EVOLOGICS_S2C

    def __init__(self, address: int, backend, output: Callable[[bytes], None] | None = None, *,
                 usbl: UsblErrorModel | None = None,
                 relative_position: RelativePosition | None = None,
                 ack_timeout_s: float = 6.0, clock: Callable[[], float] = time.time):
        self.src = int(address)
        self.backend = backend
        self.output = output or (lambda data: None)
        self.usbl = usbl
        self.relative_position = relative_position
        self.ack_timeout_s = ack_timeout_s
        self.clock = clock
        self.config = {"FC0": s2c.CARRIER_HZ, "BW0": s2c.BANDWIDTH_HZ,
                       "pwramp.txlevel": str(s2c.EVOLOGICS_S2C.default_tx_level)}
        self.counters: collections.Counter = collections.Counter()
        self.reader = AtStreamReader("host")
        self.extended = False
        self.data_mode = False
        self._busy_until = 0.0
        self._propagation_us = 0  # AT?T: the last delivery's one-way travel time
        self._pending: dict | None = None
        self._timer: threading.Timer | None = None
        self._usbl_rng = usbl.generator(self.src) if usbl else None
        self._lock = threading.RLock()
        backend.attach(self)

    # ------------------------------------------------------------------ host side
    def feed(self, data: bytes) -> None:
        """Bytes from the host; every complete command is answered."""
        for command in self.reader.feed(data):
            with self._lock:
                self.counters["commands"] += 1
                self._handle(command)

    def _reply(self, text: str, command: at.Command) -> None:
        self.output(at.format_reply(text, command.name, self.data_mode or command.data_mode))

    def _notify(self, name: str, fields=(), data: bytes | None = None) -> None:
        self.output(at.format_notification(name, fields, data, self.data_mode))

    def _handle(self, command: at.Command) -> None:
        handler = {"*SENDIM": self._send_im, "*SEND": self._send_burst, "?AL": self._query_al,
                   "!AL": self._set_al, "?AM": lambda c: self._reply(str(MAX_ADDRESS), c),
                   "!L": self._set_level, "?L": lambda c: self._reply(
                       self.config["pwramp.txlevel"], c),
                   "@ZX": self._set_extended, "?S": lambda c: self._reply("INITIAL", c),
                   "?T": lambda c: self._reply(str(self._propagation_us), c),
                   "O": self._data_mode_on, "C": self._command_mode}.get(command.name)
        if handler is None:
            self.counters["refused_command"] += 1
            self._reply("ERROR WRONG FORMAT", command)
            return
        try:
            handler(command)
        except (ValueError, IndexError):
            self.counters["refused_command"] += 1
            self._reply("ERROR WRONG FORMAT", command)

    def _query_al(self, command: at.Command) -> None:
        self._reply(str(self.src), command)

    def _set_al(self, command: at.Command) -> None:
        address = int(command.value)
        if not 1 <= address <= MAX_ADDRESS:
            raise ValueError(address)
        self.backend.detach(self)
        old, self.src = self.src, address
        try:
            self.backend.attach(self)
        except ValueError:
            self.src = old
            self.backend.attach(self)
            raise
        self._reply("OK", command)

    def _set_level(self, command: at.Command) -> None:
        self.profile.source_level_db(int(command.value), s2c.CARRIER_HZ)  # refuses 4+
        self.config["pwramp.txlevel"] = str(int(command.value))
        self._reply("OK", command)

    def _set_extended(self, command: at.Command) -> None:
        if command.value not in ("0", "1"):
            raise ValueError(command.value)
        self.extended = command.value == "1"
        self._reply("OK", command)

    def _data_mode_on(self, command: at.Command) -> None:
        self.data_mode = True
        self._reply("OK", command)

    def _command_mode(self, command: at.Command) -> None:
        self._reply("OK", command)
        self.data_mode = False

    # ------------------------------------------------------------------ transmit
    def _send_im(self, command: at.Command) -> None:
        length, dest, flag = int(command.args[0]), int(command.args[1]), command.args[2]
        if flag not in (at.ACK, at.NOACK) or not 0 <= dest <= at.BROADCAST_ADDRESS:
            raise ValueError(command)
        if not 1 <= length <= s2c.MAX_IM_BYTES:
            self._reply("ERROR INVALID MESSAGE LENGTH", command)
            return
        self._start(command, "im", dest, command.data, flag == at.ACK)

    def _send_burst(self, command: at.Command) -> None:
        length, dest = int(command.args[0]), int(command.args[1])
        if not 0 <= dest <= at.BROADCAST_ADDRESS:
            raise ValueError(command)
        if not 1 <= length <= s2c.MAX_BURST_BYTES:
            self._reply("ERROR INVALID MESSAGE LENGTH", command)
            return
        self._start(command, "burst", dest, command.data, True)

    def _start(self, command: at.Command, kind: str, dest: int, data: bytes, ack: bool) -> None:
        now = self.clock()
        if now < self._busy_until:
            self._reply("BUSY TRANSMITTING", command)
            return
        if self._pending is not None:
            self._reply("BUSY DELIVERING", command)
            return
        ack = ack and dest != at.BROADCAST_ADDRESS
        self._reply("OK", command)
        pending = {"kind": kind, "dest": dest, "bytes": len(data)}
        try:
            duration = self._transmit(kind, dest, data, ack)
        except ValueError:  # e.g. no position on the simulated channel (counted there)
            self.counters["tx_refused_by_channel"] += 1
            self._report(pending, delivered=False)
            return
        self.counters[f"tx_{kind}"] += 1
        if ack:
            self._pending = pending
            self._timer = threading.Timer(duration + self.ack_timeout_s, self._ack_timeout,
                                          (self._pending,))
            self._timer.daemon = True
            self._timer.start()

    def _transmit(self, kind: str, dest: int, data: bytes, ack: bool, acknowledged=None) -> float:
        rate = s2c.IM_RATE if kind in ("im", "ack") else s2c.BURST_RATE
        duration = self.profile.packet_duration_s(False, 0, rate, 0, len(data))
        start = self.clock()
        self._busy_until = start + duration
        tx = AcousticTransmission(kind, self.src, dest, start, duration, 0, rate,
                                  dataframe_bytes=bytes(data), ack=ack, acknowledged=acknowledged,
                                  carrier_hz=s2c.CARRIER_HZ, bandwidth_hz=s2c.BANDWIDTH_HZ)
        if self.extended:
            self._notify("SENDSTART", [dest, "ack" if kind == "ack" else kind,
                                       int(duration * 1e6), 0])
        self.backend.transmit(self, tx)
        return duration

    def _ack_timeout(self, pending: dict) -> None:
        with self._lock:
            if self._pending is not pending:
                return
            self._pending = None
            self.counters["ack_timeouts"] += 1
            self._report(pending, delivered=False)

    def _report(self, pending: dict, delivered: bool) -> None:
        if pending["kind"] == "im":
            self._notify("DELIVEREDIM" if delivered else "FAILEDIM", [pending["dest"]])
        else:
            self._notify("DELIVERED" if delivered else "FAILED",
                         [pending["bytes"], pending["dest"]])

    # ------------------------------------------------------------------ receive
    def detected(self, transmission: AcousticTransmission) -> None:
        """The backend's lock-on callback: `RECVSTART` with extended notifications."""
        if self.extended:
            with self._lock:
                self._notify("RECVSTART")

    def deliver(self, reception: Reception) -> None:
        """A transmission fully arrived here (called by the backend)."""
        tx = reception.transmission
        with self._lock:
            self.counters[f"rx_{tx.kind}"] += 1
            if tx.dest not in (self.src, at.BROADCAST_ADDRESS):
                return
            if self.extended:
                self._notify("RECVEND", [int(self.clock() * 1e6), int(tx.duration_s * 1e6),
                                         _rssi(reception), _integrity(reception)])
            self._usbl_report(reception)
            if tx.kind == "ack":
                self._acknowledged(reception)
                return
            self._recv_notification(reception)
            if tx.ack and tx.dest == self.src and tx.kind in ("im", "burst"):
                self._transmit("ack", tx.src, b"", False, acknowledged={"kind": tx.kind})

    def _recv_notification(self, reception: Reception) -> None:
        tx = reception.transmission
        common = [_rssi(reception), _integrity(reception),
                  int(round(reception.travel_time_s * 1e6)), "0.0000"]
        if tx.kind == "im":
            self._notify("RECVIM", [len(tx.dataframe_bytes), tx.src, tx.dest,
                                    at.ACK if tx.ack else at.NOACK,
                                    int(round(tx.duration_s * 1e6)), *common], tx.dataframe_bytes)
        elif tx.kind == "burst":
            self._notify("RECV", [len(tx.dataframe_bytes), tx.src, tx.dest,
                                  int(s2c.BURST_BIT_RATE_BPS), *common], tx.dataframe_bytes)

    def _acknowledged(self, reception: Reception) -> None:
        tx = reception.transmission
        pending = self._pending
        if pending is None or tx.src != pending["dest"]:
            self.counters["stray_acks"] += 1
            return
        self._pending = None
        if self._timer is not None:
            self._timer.cancel()
        self._propagation_us = int(round(reception.travel_time_s * 1e6))
        self._report(pending, delivered=True)

    def _usbl_report(self, reception: Reception) -> None:
        if self._usbl_rng is None or self.relative_position is None:
            return
        remote = reception.transmission.src
        true = self.relative_position(self.src, remote)
        if true is None:
            self.counters["usbl_without_position"] += 1
            return
        fix = self.usbl.measure(self._usbl_rng, *true)
        now = self.clock()
        measured = reception.transmission.start_time + reception.travel_time_s
        rssi, integrity = _rssi(reception), _integrity(reception)
        times = [f"{now:.6f}", f"{measured:.6f}", remote]
        enu = [f"{fix.east_m:.4f}", f"{fix.north_m:.4f}", f"{fix.up_m:.4f}"]
        self._notify("USBLLONG", times + enu + enu + ["0.0000"] * 3 + [
            int(round(reception.travel_time_s * 1e6)), rssi, integrity, f"{fix.accuracy_m:.4f}"])
        bearing, elevation = f"{fix.bearing_rad:.4f}", f"{fix.elevation_rad:.4f}"
        self._notify("USBLANGLES", times + [bearing, elevation, bearing, elevation]
                     + ["0.0000"] * 3 + [rssi, integrity, f"{fix.accuracy_m:.4f}"])
        self.counters["usbl_fixes"] += 1

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        self.backend.detach(self)


def _rssi(reception: Reception) -> int:
    level = reception.snr_in_db + reception.noise_db
    return int(round(level - 200.0)) if math.isfinite(level) else -200


def _integrity(reception: Reception) -> int:
    snr = reception.snr_in_db if math.isfinite(reception.snr_in_db) else 0.0
    return int(min(255, max(0, round(50 + 10 * snr))))
