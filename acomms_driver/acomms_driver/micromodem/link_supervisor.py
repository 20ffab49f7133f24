"""Link supervision for a modem that speaks NMEA: connect, handshake, serve, reconnect. ROS-free.

`LinkSupervisor` owns the byte link (`modem_link`) and two threads. The supervisor thread opens
the link, runs the session's handshake, then serves until the session fails (link error, silence
longer than `silence_timeout_s`, probed once at half of it) and reconnects with exponential
backoff (`reconnect_initial_s` .. `reconnect_max_s`) until stopped: the driver never gives up on
a modem. The reader thread validates every line (`nmea.NmeaReader`: garbage and bad checksums are
counted, never passed on) and hands sentences to the session.

What the session speaks is not this module's business: a `Session` (the Micromodem protocol
adapter) supplies the handshake, the sentence handler, the silence probe, a periodic tick and the
clean-up after a session ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.client_config import ClientSettings, Notifier
from acomms_driver.micromodem.modem_link import LinkError, ModemLink

SERVE_PERIOD_S = 0.2
READ_TIMEOUT_S = 0.2
POLL_S = 0.02


class SessionEnded(Exception):
    """Raised by `wait_for` when the session failed or the supervisor stops."""


class Session(Protocol):
    def handshake(self) -> str | None:
        """Runs in the supervisor thread after the link opened; the reason it failed, or None.
        May call `LinkSupervisor.wait_for` (which raises SessionEnded)."""

    def handle_sentence(self, sentence: nmea.Sentence) -> None:
        """A validated sentence from the modem (reader thread)."""

    def probe(self) -> None:
        """The modem has been silent for half the silence timeout: ask it something."""

    def tick(self) -> None:
        """Periodic work while connected (supervisor thread), e.g. start a transmission."""

    def end_session(self) -> None:
        """The link is closed: forget per-connection state."""


class LinkSupervisor:
    def __init__(self, settings: ClientSettings, session: Session, notifier: Notifier,
                 reader=None):
        self.settings = settings
        self.session = session
        self.notifier = notifier
        self.counters = notifier.counters
        # any framer with feed(bytes) -> items, reset() and last_error (NMEA by default)
        self.reader = reader if reader is not None else nmea.NmeaReader()
        self.last_reason = "not started"
        self._link: ModemLink | None = None
        self._connected = False
        self._session_failed = threading.Event()
        self._session_reason = ""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._handshake_requested = ""
        self.state = "stopped"  # stopped | connecting | handshaking | connected | disconnected
        self._supervisor: threading.Thread | None = None
        self._reader_thread: threading.Thread | None = None
        self._last_rx_monotonic = 0.0

    # ------------------------------------------------------------------ public
    def start(self) -> None:
        self._stop.clear()
        self._supervisor = threading.Thread(target=self._supervise, name="micromodem-supervisor",
                                            daemon=True)
        self._supervisor.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the link and stop the threads."""
        self._stop.set()
        self._wake.set()
        self._session_failed.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout)
            self._supervisor = None
        self.state = "stopped"

    @property
    def connected(self) -> bool:
        return self._connected

    def last_sentence_age(self) -> float:
        if not self._last_rx_monotonic:
            return float("inf")
        return time.monotonic() - self._last_rx_monotonic

    def wake(self) -> None:
        """Run the session's tick soon (e.g. a packet was queued)."""
        self._wake.set()

    def request_handshake(self, reason: str) -> None:
        """Run the session's handshake again on this link (e.g. the modem rebooted)."""
        self._handshake_requested = reason
        self._wake.set()

    @property
    def handshake_pending(self) -> bool:
        return bool(self._handshake_requested) or self.state == "handshaking"

    @property
    def reader_alive(self) -> bool:
        thread = self._reader_thread
        return thread is not None and thread.is_alive()

    def write_line(self, line: str) -> bool:
        """Write one sentence to the modem; False (counted) when there is no open link."""
        return self.write_bytes(line.encode("ascii", errors="replace"))

    def write_bytes(self, data: bytes) -> bool:
        """Write bytes to the modem as they are; False (counted) when there is no open link."""
        link = self._link
        if link is None or not link.is_open:
            self.counters["sentences_dropped_disconnected"] += 1
            return False
        try:
            link.write(data)
        except LinkError as exc:
            self.counters["sentences_dropped_disconnected"] += 1
            self._fail_session(str(exc))
            return False
        self.counters["sentences_written"] += 1
        return True

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Poll predicate until it holds (True) or timeout_s passed (False); SessionEnded when
        the session fails or the supervisor stops meanwhile."""
        end = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() >= end:
                return False
            if self._session_failed.wait(POLL_S) or self._stop.is_set():
                raise SessionEnded(self._session_reason or "stopped")
        return True

    # ------------------------------------------------------------------ supervisor thread
    def _supervise(self) -> None:
        backoff = self.settings.reconnect_initial_s
        while not self._stop.is_set():
            ok = self._run_session()
            if self._stop.is_set():
                break
            backoff = self.settings.reconnect_initial_s if ok else min(
                backoff * 2, self.settings.reconnect_max_s)
            self.notifier.log("warn", f"modem link down ({self.last_reason}); reconnecting in "
                                      f"{backoff:.1f} s")
            self._stop.wait(backoff)

    def _open_link(self) -> ModemLink | None:
        self.state = "connecting"
        try:
            link = self.settings.link_factory()
            link.open()
        except (LinkError, ValueError) as exc:
            self.counters["connect_failures"] += 1
            self.last_reason = str(exc)
            return None
        return link

    def _run_session(self) -> bool:
        """One connection: open, handshake, serve until it fails. True if it got connected."""
        self._session_failed.clear()
        self._session_reason = ""
        link = self._open_link()
        if link is None:
            return False
        self.reader.reset()
        self.state = "handshaking"
        self._handshake_requested = ""
        self._link = link
        self._last_rx_monotonic = 0.0
        self._reader_thread = threading.Thread(target=self._read_loop, args=(link,),
                                               name="micromodem-reader", daemon=True)
        self._reader_thread.start()
        got_connected = False
        try:
            reason = self._handshake()
            if reason:
                self.last_reason = reason
                return False
            got_connected = True
            self._set_connected(True, f"connected to {link.description}")
            self._serve()
            self.last_reason = self._session_reason or "stopped"
        finally:
            self._connected = False
            self.state = "disconnected"
            self._session_failed.set()  # stops the reader before its link is closed
            self._reader_thread.join(2.0)
            link.close()
            self._link = None
            self.session.end_session()
            if got_connected:
                self.counters["disconnects"] += 1
                self._set_connected(False, self.last_reason)
        return got_connected

    def _fail_session(self, reason: str) -> None:
        if not self._session_failed.is_set():
            self._session_reason = reason
            self._session_failed.set()
            self._wake.set()

    def _serve(self) -> None:
        probe_sent = False
        while not self._stop.is_set() and not self._session_failed.is_set():
            self._wake.wait(SERVE_PERIOD_S)
            self._wake.clear()
            if self._session_failed.is_set() or self._stop.is_set():
                return
            if self._handshake_requested and not self._handshake_again():
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
                    self.session.probe()
            else:
                probe_sent = False
            self.session.tick()

    def _handshake(self) -> str | None:
        """The session's handshake; the reason it failed (counted), or None."""
        try:
            reason = self.session.handshake()
        except SessionEnded as exc:
            reason = str(exc)
        if reason:
            self.counters["handshake_failures"] += 1
        return reason

    def _handshake_again(self) -> bool:
        """The requested handshake on the open link; False (session failed) if it failed."""
        why, self._handshake_requested = self._handshake_requested, ""
        self.counters["rehandshakes"] += 1
        self.state = "handshaking"
        self.notifier.log("info", f"{why}: handshake again")
        reason = self._handshake()
        if reason:
            self._fail_session(f"handshake after '{why}' failed: {reason}")
            return False
        self.state = "connected"
        self._wake.set()
        return True

    def _set_connected(self, connected: bool, reason: str) -> None:
        self._connected = connected
        if connected:
            self.state = "connected"
        self.counters["connects" if connected else "connection_lost_reports"] += 1
        self.notifier.log("info" if connected else "warn", reason)
        self.notifier.call("on_connection", connected, reason)
        self._wake.set()

    # ------------------------------------------------------------------ reader thread
    def _read_loop(self, link: ModemLink) -> None:
        while not self._stop.is_set() and not self._session_failed.is_set():
            try:
                data = link.read(READ_TIMEOUT_S)
            except LinkError as exc:
                self._fail_session(str(exc))
                return
            if data:
                self._handle_data(data)

    def _handle_data(self, data: bytes) -> None:
        """Every sentence in data to the session; an exception costs its sentence only."""
        try:
            sentences = self.reader.feed(data)
        except Exception as exc:  # noqa: BLE001 - a framing bug costs this chunk only
            self.counters["reader_errors"] += 1
            self.reader.reset()
            self.reader.last_error = f"line framing: {exc!r}"[:200]
            return
        for sentence in sentences:
            self._last_rx_monotonic = time.monotonic()
            try:
                self.session.handle_sentence(sentence)
            except Exception as exc:  # noqa: BLE001 - the reader thread must never die
                self.counters["sentence_handler_errors"] += 1
                kind = getattr(sentence, "type", type(sentence).__name__)
                self.reader.last_error = f"{kind}: {exc!r}"[:200]
