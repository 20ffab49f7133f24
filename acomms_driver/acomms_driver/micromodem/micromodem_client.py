"""ROS-free Micromodem client: the protocol adapter behind a fault-tolerant link supervisor.

The client is the one object the driver node talks to. It wires two halves together:

- `link_supervisor.LinkSupervisor`: the byte link, connect / reconnect with backoff, the silence
  timeout, the reader thread, the handshake's timing;
- `micromodem_protocol.MicromodemProtocol`: pyacomms' `Micromodem` (the handshake's sentences,
  FDP / TDP / legacy transmit through `transmit_queue`, receptions through `receptions`, pings
  through `pings`, CST / XST), which `packet_rules` and the modem profile tell what to accept.

Packets queued for transmit are never lost to a link fault: the in-flight packet goes back to the
head of the queue when the link drops before `$CATXF`, and is sent again after reconnection
(at-least-once; a packet whose CATXF was lost with the link can be sent twice).
"""

from __future__ import annotations

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.client_config import (
    ClientCallbacks,
    ClientSettings,
    Notifier,
    PingResult,
    ReceivedModemPacket,
)
from acomms_driver.micromodem.link_supervisor import LinkSupervisor
from acomms_driver.micromodem.micromodem_protocol import (
    FALLBACK_FIRMWARE_VERSION,
    MicromodemProtocol,
)
from acomms_driver.micromodem.packet_rules import (
    PACKET_TYPE_AUTO,
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    PACKET_TYPE_LEGACY_PSK,
    PACKET_TYPE_UNKNOWN,
    ModemPacket,
    validate_packet,
)

__all__ = ["ClientCallbacks", "ClientSettings", "FALLBACK_FIRMWARE_VERSION", "MicromodemClient",
           "ModemPacket", "PACKET_TYPE_AUTO", "PACKET_TYPE_FDP", "PACKET_TYPE_FSK",
           "PACKET_TYPE_LEGACY_PSK", "PACKET_TYPE_UNKNOWN", "PingResult", "ReceivedModemPacket",
           "validate_packet"]


class MicromodemClient:
    """Owns the pyacomms Micromodem (in the protocol adapter) and the link supervisor."""

    def __init__(self, settings: ClientSettings, callbacks: ClientCallbacks | None = None):
        self.settings = settings
        self.notifier = Notifier(callbacks)
        self.callbacks = self.notifier.callbacks
        self.counters = self.notifier.counters
        self.protocol = MicromodemProtocol(settings, self.notifier)
        self.link = LinkSupervisor(settings, self.protocol, self.notifier)
        self.protocol.attach(self.link)
        self.modem = self.protocol.modem
        self.reader = self.link.reader

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.link.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the link and stop the threads. Queued packets stay queued."""
        self.link.stop(timeout)

    def close(self) -> None:
        """stop() and release pyacomms' log file."""
        self.stop()
        self.protocol.close_log()

    # ------------------------------------------------------------------ state
    @property
    def connected(self) -> bool:
        return self.link.connected

    @property
    def last_reason(self) -> str:
        return self.link.last_reason

    @property
    def unconfirmed_config(self) -> list[str]:
        return self.protocol.unconfirmed_config

    @property
    def modem_src(self) -> int:
        return int(self.modem.id)

    @property
    def firmware_version(self) -> str:
        return str(self.modem.fw_version or "")

    @property
    def turnaround_s(self) -> float:
        """The modem's turn-around time (TAT, reported in ms) from the handshake."""
        return float(self.modem.config_data.get("TAT", 0) or 0) / 1000.0

    def last_sentence_age(self) -> float:
        return self.link.last_sentence_age()

    def queue_length(self) -> int:
        return len(self.protocol.tx)

    # ------------------------------------------------------------------ actions
    def queue_packet(self, packet: ModemPacket,
                     insert_at_head: bool = False) -> tuple[bool, int, str]:
        """Queue a packet for transmit: (accepted, position_in_queue, reason if refused)."""
        return self.protocol.queue_packet(packet, insert_at_head)

    def send_sentence(self, text: str) -> str | None:
        """Send a raw sentence ('$CCCFQ,SRC' with or without checksum); reason if refused."""
        try:
            line = nmea.complete_sentence(text)
        except nmea.NmeaError as exc:
            return str(exc)
        return None if self.link.write_line(line) else "modem not connected"

    def set_config(self, name: str, value) -> bool:
        """Send $CCCFG,name,value now (False if not connected); re-sent on every reconnection."""
        return self.protocol.set_config(name, value)

    def query_config(self, param: str, timeout_s: float) -> tuple[str | None, str]:
        """$CCCFQ,param and wait for its $CACFG replies: (value, reason if none)."""
        if not self.link.connected:
            return None, "modem not connected"
        return self.protocol.query_config(param, timeout_s)

    def ping_transponders(self, mask, timeout_s: float) -> tuple[list[float] | None, str]:
        """$CCPDT to the transponders of mask (A-D), wait for $SNTTA: (travel times, reason)."""
        return self.protocol.transponders.ping(mask, timeout_s)

    @property
    def status(self):
        """modem_status.ModemStatus: errors, revision, reboots, clock, sentence counts."""
        return self.protocol.status

    @property
    def link_state(self) -> str:
        return self.link.state

    def ping(self, dest: int, rate: int = 1, cdr: int = 0, hexdata: bytes = b"",
             timeout: float = 5.0) -> PingResult:
        """Ping a remote modem ($CCCMD,PNG) and wait for its $CACMR,PNR (blocks up to timeout)."""
        return self.protocol.pings.ping(dest, rate, cdr, hexdata, timeout)
