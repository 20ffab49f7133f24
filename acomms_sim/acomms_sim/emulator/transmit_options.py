"""The emulated Micromodem's transmit options (part of `micromodem_model.MicromodemModel`):
transmit queues, acknowledgements, JANUS, clock sources. ROS-free.

- transmit queues: the firmware >= 2.1.9 `$CCTFP` form carries the queue in its leading field
  (0 / 1 immediate, 2 PPS, 3 TXTRIG, acomms_interfaces' QueueTxPacket numbering). A PPS packet is
  held until the next whole second of the modem clock (its PPS: `pps_source`), a TXTRIG packet
  until `pulse_txtrig()` (the TXTRIG input); the modem is busy meanwhile;
- acknowledgements: a data packet with the ack flag set, addressed to this modem, is answered
  acoustically after the turn-around time; the sender reports `$CAACK,src,dest,frame,1` per
  received frame (legacy) or `$CACDR,time,seq,src,dest,minirate,mini_mask,data_mask` (FDP / TDP /
  JANUS), src being the acknowledging modem (`acomms_driver.micromodem.acks`);
- JANUS: `$CCTJN` -> `$CATJN` echo, on-air time, `$CATXF` / `$CAXST`; heard as `$CAJRX` + `$CACST`
  (`acomms_driver.micromodem.janus`);
- clock sources: every `$CACST` clock-status field and `$CATMQ` name the RTC source (onboard RTC,
  or user command once `$CCTMS` set it) and `pps_source` (RTC | EXT | ...).
"""

from __future__ import annotations

import time

from acomms_driver.micromodem import acks, janus, nmea
from acomms_driver.micromodem.modem_status import PPS_SOURCES, RTC_SOURCES
from acomms_sim.emulator.transmission import AcousticTransmission

QUEUE_PPS, QUEUE_TXTRIG = 2, 3
CST_TYPE_UNKNOWN = -1


class _TransmitOptions:
    """Uses MicromodemModel's emit, _later, _transmit, _cst, _lock, config, counters."""

    def _init_transmit_options(self) -> None:
        self.pps_source = "RTC"
        self._held = None  # (queue, transmission) waiting for a PPS edge or a TXTRIG pulse

    def _transmission(self, kind: str, dest: int, duration_s: float, data: bytes, ack: bool):
        return AcousticTransmission(kind, self.src, dest, 0.0, duration_s, dataframe_bytes=data,
                                    ack=ack)

    # ------------------------------------------------------------------ clock sources
    def clock_sources(self) -> tuple[str, str]:
        return ("user_command" if self.clock_set else "RTC"), self.pps_source

    def clock_status(self) -> int:
        """The $CACST clock-status field: bits 0-1 RTC source, bits 2-4 PPS source."""
        rtc, pps = self.clock_sources()
        codes = {name: code for code, name in RTC_SOURCES.items()}
        pps_codes = {name: code for code, name in PPS_SOURCES.items()}
        return codes.get(rtc, 1) | (pps_codes.get(pps, 0) << 2)

    # ------------------------------------------------------------------ transmit queues
    def _transmit_from_queue(self, queue: int, transmission) -> None:
        """Transmit now, or hold for the PPS / TXTRIG queue."""
        if queue not in (QUEUE_PPS, QUEUE_TXTRIG):
            self._transmit(transmission)
            return
        if self._held is not None or time.time() < self._busy_until:
            self.counters["tx_refused_busy"] += 1
            raise ValueError("modem is already transmitting")  # as _transmit says
        self._held = (queue, transmission)
        self.counters["tx_held"] += 1
        if queue == QUEUE_PPS:
            modem_now = self.modem_time()
            wait = int(modem_now) + 1 - modem_now
            self._later(wait, self._release_held, QUEUE_PPS, time.time() + wait)

    def pulse_txtrig(self) -> bool:
        """A pulse on the TXTRIG input: the held TXTRIG packet goes out (True if there was one)."""
        return self._release_held(QUEUE_TXTRIG)

    def _release_held(self, queue: int, edge_time: float | None = None) -> bool:
        """The held packet starts (at the PPS edge, however late the timer fired)."""
        with self._lock:
            if self._held is None or self._held[0] != queue:
                return False
            _, transmission = self._held
            self._held = None
            self.counters[f"tx_released_{'pps' if queue == QUEUE_PPS else 'txtrig'}"] += 1
            self._transmit(transmission, start_time=edge_time)
            return True

    # ------------------------------------------------------------------ JANUS
    def _on_CCTJN(self, fields) -> None:
        dest, ack = int(fields[1]), int(fields[2])
        cargo = bytes.fromhex(fields[4]) if len(fields) > 4 and fields[4] else b""
        reason = janus.check_cargo(0, len(cargo))
        if reason:
            raise ValueError(reason)
        self.emit("CATJN", [0, dest, ack, fields[3] if len(fields) > 3 else "",
                            cargo.hex().upper()])
        self._transmit(self._transmission("janus", dest, janus.on_air_s(len(cargo)),
                                          cargo, bool(ack)))

    def _receive_janus(self, reception) -> None:
        tx = reception.transmission
        data_ok = all(reception.dataframe_ok or [True])
        self.emit("CAJRX", janus.jrx_fields(tx.src, tx.dest, tx.ack, tx.dataframe_bytes,
                                            data_ok))
        self._cst(reception, 0 if data_ok else 1, CST_TYPE_UNKNOWN, -1, 1, int(not data_ok))
        self._acknowledge(reception, [], [data_ok])

    # ------------------------------------------------------------------ acknowledgements
    def _acknowledge(self, reception, mini_ok: list[bool], data_ok: list[bool]) -> None:
        """Answer a packet sent to this modem with the ack flag."""
        tx = reception.transmission
        if not tx.ack or tx.dest != self.src:
            return
        answer = self._transmission("ack", tx.src, janus.on_air_s(0) / 8.0, b"", False)
        answer.acknowledged = {"kind": tx.kind, "sequence": self._sequence,
                               "minirate": tx.miniframe_rate, "mini_ok": list(mini_ok),
                               "data_ok": list(data_ok)}
        turnaround = float(self.config.get("TAT", "50")) / 1000.0
        self._later(turnaround, self._send_acknowledgement, answer)

    def _send_acknowledgement(self, answer) -> None:
        with self._lock:
            try:
                self._transmit(answer, report=False)
            except ValueError:
                self.counters["ack_skipped_busy"] += 1

    def _receive_ack(self, reception) -> None:
        tx = reception.transmission
        if tx.dest != self.src or tx.acknowledged is None:
            return
        done = tx.acknowledged
        if done["kind"] == "legacy":
            for frame, ok in enumerate(done["data_ok"], start=1):
                if ok:
                    self.emit("CAACK", [tx.src, tx.dest, frame, 1])
            return
        self.emit("CACDR", [nmea.format_iso_time(time.time()), done["sequence"], tx.src,
                            tx.dest, done["minirate"], acks.frame_mask(done["mini_ok"]),
                            acks.frame_mask(done["data_ok"])])
