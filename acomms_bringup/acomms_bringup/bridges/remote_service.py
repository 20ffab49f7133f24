"""Services over acoustics, without ROS: service tables, range checks, correlation ids.

A caller's side serves each service of a table under its usual name; a call is range-checked
(`RemoteService.check_request`, refused before anything is transmitted), gets a correlation id and
travels as an acomms_interfaces/RemoteServiceRequest (service id = index in the table, request
CDR-serialized); the server's side calls the real service and answers with a
RemoteServiceResponse (status + CDR response). The caller completes its service call with that
answer, or fills the response's result field with the error code of the table
(`error_results`) on timeout, "not available" or refusal. Both ends must use the same table.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Iterable

# Outcomes a caller can see besides a real answer (RemoteServiceResponse.STATUS_* on the wire).
STATUS_OK, STATUS_TIMEOUT, STATUS_NOT_AVAILABLE, STATUS_BAD_REQUEST = 0, 1, 2, 3
STATUS_NAMES = {STATUS_OK: "ok", STATUS_TIMEOUT: "timeout", STATUS_NOT_AVAILABLE: "not available",
                STATUS_BAD_REQUEST: "bad request"}
OUT_OF_RANGE = "out_of_range"   # caller-side refusal before transmitting


@dataclasses.dataclass(frozen=True)
class FieldRange:
    """A request field must lie in minimum..maximum or be one of also_allowed (e.g. OFF)."""

    field: str
    minimum: float
    maximum: float
    also_allowed: tuple = ()

    def check(self, value) -> str | None:
        value = float(value)
        if value in self.also_allowed:
            return None
        if not math.isfinite(value) or not self.minimum <= value <= self.maximum:
            extra = "".join(f" or {a:g}" for a in self.also_allowed)
            return (f"{self.field} {value:g} outside {self.minimum:g}..{self.maximum:g}"
                    f"{extra}")
        return None


@dataclasses.dataclass(frozen=True)
class RemoteService:
    """One service a bridge carries: its name (relative to the caller's / server's namespace
    or absolute), its type, the ranges of its request fields and where errors go."""

    name: str
    srv_type: str                               # pkg/srv/Type
    ranges: tuple[FieldRange, ...] = ()
    result_field: str | None = None             # dotted path of the response's result code
    error_results: tuple[tuple[str, int], ...] = ()   # ((status name, result code), ...)

    def check_request(self, request) -> str | None:
        """Why the request must not be sent (first failing range), or None."""
        for rule in self.ranges:
            reason = rule.check(getattr(request, rule.field))
            if reason:
                return f"{self.name}: {reason}"
        return None

    def error_code(self, status: str) -> int | None:
        return dict(self.error_results).get(status)

    def fill_error(self, response, status: str):
        """Set the response's result field to the table's code for status (when it has one)."""
        code = self.error_code(status)
        if self.result_field is None or code is None:
            return response
        *path, last = self.result_field.split(".")
        target = response
        for part in path:
            target = getattr(target, part)
        setattr(target, last, code)
        return response


def interface_class(type_name: str):
    """The generated class of 'pkg/msg/Type' or 'pkg/srv/Type'; ImportError / AttributeError
    when that package is not built (or has no such type)."""
    package, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


srv_class = interface_class


class PendingCalls:
    """Calls in flight on the caller's side: correlation ids (16 bit, never two alike in
    flight) and deadlines on the node clock."""

    ID_MODULUS = 1 << 16

    def __init__(self, first_id: int = 1):
        self._next = first_id % self.ID_MODULUS
        self._calls: dict[int, tuple[float, object]] = {}   # id -> (deadline_s, waiter)

    def __len__(self) -> int:
        return len(self._calls)

    def add(self, deadline_s: float, waiter) -> int:
        if len(self._calls) >= self.ID_MODULUS:
            raise RuntimeError("every correlation id is in flight")
        while self._next in self._calls:
            self._next = (self._next + 1) % self.ID_MODULUS
        correlation_id = self._next
        self._next = (self._next + 1) % self.ID_MODULUS
        self._calls[correlation_id] = (deadline_s, waiter)
        return correlation_id

    def put(self, correlation_id: int, deadline_s: float, waiter) -> bool:
        """Track a call whose id the other side chose; False if that id is already in flight."""
        if correlation_id in self._calls:
            return False
        self._calls[correlation_id] = (deadline_s, waiter)
        return True

    def pop(self, correlation_id: int):
        """The waiter of that call, or None if unknown (late or duplicate answer)."""
        entry = self._calls.pop(correlation_id, None)
        return None if entry is None else entry[1]

    def expired(self, now_s: float) -> list:
        """Remove and return the waiters whose deadline passed."""
        gone = [cid for cid, (deadline, _) in self._calls.items() if deadline <= now_s]
        return [self._calls.pop(cid)[1] for cid in gone]

    def next_deadline_s(self) -> float | None:
        return min((deadline for deadline, _ in self._calls.values()), default=None)


def service_index(table: Iterable[RemoteService]) -> dict[str, int]:
    """{service name: service id} of a table (ids are positions, so both ends agree)."""
    return {service.name: index for index, service in enumerate(table)}
