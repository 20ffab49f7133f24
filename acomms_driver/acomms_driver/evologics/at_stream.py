"""Byte-stream framing for the EvoLogics AT protocol (either direction), ROS-free.

`AtStreamReader("modem")` reads what a modem writes (replies and notifications, for a driver);
`AtStreamReader("host")` reads what a host writes (commands, for the emulator). `feed(bytes)`
returns the parsed items (`at_protocol` dataclasses) of every complete frame. Framed kinds are
cut by their `<len>` field (binary data may hold line feeds); other lines end at a line feed.

Hostile input: the buffer never exceeds `MAX_FRAME_BYTES` plus one read; a refused frame is
counted in `counters` under "refused_<reason>" (too_long, bad_length, missing_terminator,
not_ascii, bad_fields, bad_data_mode) and skipped up to the next line feed; `feed` never raises.
"""

from __future__ import annotations

import collections

from acomms_driver.evologics import at_protocol as at

_HEADER_LIMIT = 96  # longest header before a framed <data>, or a data-mode prefix


class _Refused(Exception):
    def __init__(self, reason: str, resync: bool = True):
        super().__init__(reason)
        self.reason = reason
        self.resync = resync


class AtStreamReader:
    def __init__(self, direction: str = "modem", max_frame_bytes: int = at.MAX_FRAME_BYTES):
        if direction not in ("modem", "host"):
            raise ValueError("direction is 'modem' or 'host'")
        self.direction = direction
        self.max_frame_bytes = max_frame_bytes
        self.counters: collections.Counter = collections.Counter()
        self._framed = at.MODEM_FRAMED if direction == "modem" else at.HOST_FRAMED
        self._buffer = bytearray()
        self._discarding = False
        self.last_error = ""

    def reset(self) -> None:
        """Forget a partial frame (a new connection); the counters stay."""
        self._buffer.clear()
        self._discarding = False

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list:
        """Items of every frame completed by this chunk (never raises)."""
        self._buffer += chunk
        items: list = []
        while self._buffer:
            if self._discarding and not self._skip_line():
                break
            while self._buffer[:1] in (b"\r", b"\n"):
                del self._buffer[:1]
            if not self._buffer:
                break
            try:
                result = self._next_frame()
            except _Refused as refused:
                self.counters["refused_" + refused.reason] += 1
                self.last_error = refused.reason
                self._discarding = refused.resync
                continue
            if result is None:
                break
            items.append(result)
            self.counters["accepted"] += 1
        return items

    def _skip_line(self) -> bool:
        """Drop bytes up to and including the next line feed; False if there is none yet."""
        end = self._buffer.find(b"\n")
        if end < 0:
            self._buffer.clear()
            return False
        del self._buffer[:end + 1]
        self._discarding = False
        return True

    def _next_frame(self):
        data_mode = self._buffer.startswith(b"+++")
        if b"+++".startswith(bytes(self._buffer[:3])) and len(self._buffer) < 3:
            return None
        if data_mode and self.direction == "modem":
            return self._data_mode_frame()
        offset = 3 if data_mode else 0
        for prefix, header_fields in self._framed.items():
            head = bytes(self._buffer[offset:offset + len(prefix)])
            if head == prefix.encode():
                return self._framed_frame(offset, prefix, header_fields, data_mode)
            if prefix.encode().startswith(head) and len(head) < len(prefix):
                if b"\n" not in head:
                    return None
        return self._line_frame(offset, data_mode)

    def _take(self, start: int, length: int, end_ok: bool = True) -> bytes | None:
        """buffer[start:start+length] followed by a line end (consumed), None if incomplete."""
        stop = start + length
        if len(self._buffer) < stop + 1:
            return None
        data = bytes(self._buffer[start:stop])
        if self._buffer[stop:stop + 1] == b"\n":
            del self._buffer[:stop + 1]
        elif self._buffer[stop:stop + 2] == b"\r\n":
            del self._buffer[:stop + 2]
        elif self._buffer[stop:stop + 1] == b"\r" and len(self._buffer) == stop + 1:
            return None
        else:
            del self._buffer[:stop]
            raise _Refused("missing_terminator")
        return data

    def _header(self, start: int, count: int):
        """(fields, data start) after `count` commas from start; None if incomplete."""
        window = bytes(self._buffer[start:start + _HEADER_LIMIT])
        position = -1
        for _ in range(count):
            position = window.find(b",", position + 1)
            if position < 0:
                if b"\n" in window or len(window) >= _HEADER_LIMIT:
                    raise _Refused("bad_fields")
                return None
        header = window[:position]
        if b"\n" in header or not header.isascii():
            raise _Refused("bad_fields")
        return header.decode().split(","), start + position + 1

    def _framed_frame(self, offset: int, prefix: str, header_fields: int, data_mode: bool):
        start = offset + len(prefix)
        older = prefix in at.WITHOUT_PROPAGATION_TIME
        found = self._header(start, header_fields - 1 if older else header_fields)
        if found is not None and older and "." not in found[0][-1]:
            found = self._header(start, header_fields)  # newer firmware: propagation time too
        if found is None:
            return None
        fields, position = found
        if not fields[0].isdigit():
            raise _Refused("bad_length")
        length = int(fields[0])
        if length > self.max_frame_bytes:
            raise _Refused("too_long")
        data = self._take(position, length)
        if data is None:
            return None
        try:
            if self.direction == "modem":
                return at.parse_framed_notification(prefix, fields, data)
            return at.parse_command(prefix + ",".join(fields), data, data_mode)
        except (ValueError, IndexError):
            raise _Refused("bad_fields", resync=False) from None

    def _line_frame(self, offset: int, data_mode: bool):
        end = self._buffer.find(b"\n", offset)
        if end < 0:
            if len(self._buffer) > self.max_frame_bytes:
                self._buffer.clear()
                raise _Refused("too_long")
            return None
        raw = bytes(self._buffer[offset:end]).rstrip(b"\r")
        del self._buffer[:end + 1]
        if len(raw) > self.max_frame_bytes:
            raise _Refused("too_long", resync=False)
        return self._parse_text(raw, "", data_mode)

    def _parse_text(self, raw: bytes, command: str, data_mode: bool):
        if not raw.isascii():
            raise _Refused("not_ascii", resync=False)
        try:
            if self.direction == "modem":
                return at.parse_modem_line(raw.decode(), command)
            return at.parse_command(raw.decode(), b"", data_mode)
        except (ValueError, IndexError):
            raise _Refused("bad_fields", resync=False) from None

    def _data_mode_frame(self):
        """`+++AT<command>:<len>:<payload>` (a reply, or a notification when command is empty)."""
        match = at._DATA_MODE.match(bytes(self._buffer[:_HEADER_LIMIT]))
        if match is None:
            if b"\n" in self._buffer[:_HEADER_LIMIT] or len(self._buffer) >= _HEADER_LIMIT:
                raise _Refused("bad_data_mode")
            return None
        length = int(match.group(2))
        if length > self.max_frame_bytes:
            raise _Refused("too_long")
        payload = self._take(match.end(), length)
        if payload is None:
            return None
        command = match.group(1).decode("ascii", "replace")
        for prefix in at.MODEM_FRAMED:
            if not command and payload.startswith(prefix.encode()):
                return self._framed_payload(prefix, payload)
        return self._parse_text(payload, command, True)

    def _framed_payload(self, prefix: str, payload: bytes):
        """A framed notification inside a data-mode frame: its data is the last <len> bytes."""
        body = payload[len(prefix):]
        head = body.partition(b",")[0]
        if not head.isdigit() or int(head) > len(body):
            raise _Refused("bad_length", resync=False)
        header = body[:len(body) - int(head)]
        fields = header[:-1].decode("ascii", "replace").split(",")
        layouts = {at.MODEM_FRAMED[prefix]}
        if prefix in at.WITHOUT_PROPAGATION_TIME:
            layouts.add(at.MODEM_FRAMED[prefix] - 1)
        if not header.endswith(b",") or not header.isascii() or len(fields) not in layouts:
            raise _Refused("bad_fields", resync=False)
        try:
            return at.parse_framed_notification(prefix, fields, body[len(header):])
        except (ValueError, IndexError):
            raise _Refused("bad_fields", resync=False) from None
