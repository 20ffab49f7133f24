"""`query_modem_param`: ask the modem for a parameter and wait for its `$CACFG` replies. ROS-free.

`$CCCFQ,<name>` is answered by one `$CACFG,name,value`; `$CCCFQ,<group>` (e.g. `pwramp`) by one
per parameter of the group, and ALL / TOP by the whole list. A query for an exact name ends at its
reply; a group query collects replies until none has come for `GROUP_QUIET_S`. One value is
returned as it is, several as a JSON object {name: value}.
"""

from __future__ import annotations

import json
import threading
import time

# A group query ends when no reply of the group has come for this long.
GROUP_QUIET_S = 0.3
WHOLE_LIST = ("ALL", "TOP")


class _Query:
    def __init__(self, param: str):
        self.param = param
        self.values: dict[str, str] = {}
        self.last_reply = 0.0

    def matches(self, name: str) -> bool:
        return (self.param in WHOLE_LIST or name == self.param
                or name.startswith(self.param + "."))

    def answered(self, now: float) -> bool:
        if self.param in self.values:
            return True
        return bool(self.values) and now - self.last_reply >= GROUP_QUIET_S


class ConfigQueries:
    """Open queries; `on_config` is called (reader thread) for every `$CACFG`."""

    def __init__(self):
        self._condition = threading.Condition()
        self._open: list[_Query] = []

    def on_config(self, name: str, value: str) -> None:
        with self._condition:
            for query in self._open:
                if query.matches(name):
                    query.values[name] = value
                    query.last_reply = time.monotonic()
            self._condition.notify_all()

    def query(self, param: str, send, timeout_s: float) -> tuple[str | None, str]:
        """Send `$CCCFQ,param` through send(param) -> bool and wait: (value, reason)."""
        param = param.strip()
        if not param or any(c in param for c in ",*$\r\n"):
            return None, f"bad parameter name {param!r}"
        query = _Query(param)
        with self._condition:
            self._open.append(query)
        try:
            if not send(param):
                return None, "modem not connected"
            deadline = time.monotonic() + timeout_s
            with self._condition:
                while not query.answered(time.monotonic()):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._condition.wait(min(left, GROUP_QUIET_S / 3))
                values = dict(query.values)
        finally:
            with self._condition:
                self._open.remove(query)
        if not values:
            return None, f"no $CACFG reply for {param} within {timeout_s:g} s"
        if param in values:
            return values[param], ""
        return json.dumps(values, sort_keys=True), ""
