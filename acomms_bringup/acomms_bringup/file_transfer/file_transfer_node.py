"""file_transfer_node: files over acoustics as fragmented messages (issue 15).

- Sending: the `send_file` service (SendFile: dest, path) reads the file (at most
  `max_file_bytes`; only a regular, not hidden file inside `send_directories`, see
  `store.sendable_path`; otherwise refused with the reason and counted in files_failed),
  publishes it as a FileTransfer on `send_topic` (the codec config's subscribe topic: a message
  codec with `allow_fragmentation: true` and `fragment_always: true`,
  fields dest (codec dest), name, data, sha256) and answers when the queue node's
  `fragmentation_status` shows the file's session COMPLETED (every block acknowledged: success)
  or EXPIRED, or after `send_timeout_s` (node clock). Which session is the file's is told without
  comparing the queue node's stamps with this node's clock (`session`), so it works on any clock
  and warp. One file at a time: a request while another is in flight is refused. That session's
  statuses, and only those, are republished on `send_file_progress` (`acomms_send_file` prints
  them).
- Receiving: FileTransfer messages on `receive_topic` are written into `receive_directory`
  (`store.write_received`: plain names only, SHA-256 checked, never outside the directory,
  created at configure; relative: to the working directory); refusals are logged and counted.
  Empty `receive_directory`: files are not received. The sender is the message's `src` (the
  received packet's SRC, also with a codec config that has no `src` field).
Counters on /diagnostics (status named after the node) after every event.
"""

from __future__ import annotations

import os
import sys

from rclpy.lifecycle import TransitionCallbackReturn

from acomms_bringup.bridges.deferred_service import DeferredService
from acomms_bringup.file_transfer.session import Expected, SessionWatch
from acomms_bringup.file_transfer.store import (
    RECEIVE_COUNTERS,
    FileRefused,
    read_for_sending,
    write_received,
)
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    counters_diagnostics,
    declare_parameters,
    now_s,
    parameter_values,
    run_node,
    seconds_to_time_msg,
    stamp_seconds,
)
from acomms_interfaces.msg import FileTransfer, FragmentationStatus
from acomms_interfaces.srv import SendFile

PARAMETERS = (
    ParameterSpec("receive_directory", "", "Directory received files are written into, made at "
                  "configure; relative: to the node's working directory (empty: files are not "
                  "received)", parameter_type="string"),
    ParameterSpec("send_directories", ["."], "Directories send_file may read files from "
                  "(subdirectories included; hidden files and directories and paths that "
                  "resolve outside, e.g. by a symlink, are refused); relative: to the node's "
                  "working directory (where acomms_run started); empty list: no file is sent",
                  parameter_type="string_array"),
    ParameterSpec("send_topic", "to_acomms/file", "Topic the queue node takes files from",
                  parameter_type="string"),
    ParameterSpec("receive_topic", "from_acomms/file", "Topic the dispatch node publishes "
                  "received files on", parameter_type="string"),
    ParameterSpec("max_file_bytes", 60000, "Largest file sent (the codec config's data "
                  "max_length must hold it)", minimum=1, maximum=16_000_000),
    ParameterSpec("send_timeout_s", 3600.0, "send_file fails when the receiver has not "
                  "acknowledged everything after this long (node clock: simulated seconds in a "
                  "simulation)", minimum=1.0, maximum=1e7),
    ParameterSpec("overwrite", False, "Replace an existing received file (otherwise the new "
                  "one is written as name.1, name.2, ...)"),
)
SEND_COUNTERS = ("files_sent", "files_acknowledged", "files_failed")
PROGRESS_TOPIC = "send_file_progress"


class _Transfer:
    def __init__(self, response, expected: Expected, deadline_s: float):
        self.response, self.expected, self.deadline_s = response, expected, deadline_s

    @property
    def dest(self) -> int:
        return self.expected.dest


class FileTransferNode(ManagedNode):
    def __init__(self, node_name: str = "file_transfer_node", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, PARAMETERS)
        self.counts = dict.fromkeys(SEND_COUNTERS + RECEIVE_COUNTERS, 0)
        self.last_error = ""
        self._transfer: _Transfer | None = None
        self._sessions = SessionWatch()
        self._file_pub = self._diagnostics_pub = self._service = self._progress_pub = None
        self.values: dict = {}

    def on_configure(self, state) -> TransitionCallbackReturn:
        self.values = parameter_values(self, [spec.name for spec in PARAMETERS])
        directory = self.values["receive_directory"]
        if directory:
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as exc:
                self.get_logger().error(f"receive_directory {directory!r}: "
                                        f"{exc.strerror or exc}")
                return TransitionCallbackReturn.FAILURE
            self.values["receive_directory"] = os.path.abspath(directory)
        self.values["send_directories"] = [os.path.realpath(d) for d in
                                           self.values["send_directories"] if d]
        self._file_pub = self.configured.publisher(FileTransfer, self.values["send_topic"], 10)
        self._progress_pub = self.configured.publisher(FragmentationStatus, PROGRESS_TOPIC, 50)
        from diagnostic_msgs.msg import DiagnosticArray
        self._diagnostics_pub = self.configured.publisher(DiagnosticArray, "/diagnostics", 10)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        try:
            self._service = DeferredService(self.activated, SendFile, "send_file",
                                            self._on_send_file)
            self.activated.subscription(FragmentationStatus, "fragmentation_status",
                                        self._on_status, 50)
            if self.values["receive_directory"]:
                self.activated.subscription(FileTransfer, self.values["receive_topic"],
                                            self._on_file, 10)
            self.activated.timer(1.0, self._check_deadline)
        except Exception as exc:
            return self.activate_failed(exc)
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._finish(False, "node deactivated")
        return super().on_deactivate(state)

    def on_release(self) -> None:
        self._finish(False, "node cleaned up")
        self._file_pub = self._diagnostics_pub = self._service = self._progress_pub = None

    # -- sending ----------------------------------------------------------------------------------
    def _on_send_file(self, request, response):
        if self._transfer is not None:
            response.message = "another file is being sent; try again when it is done"
            return response
        try:
            name, data, digest = read_for_sending(request.path, self.values["max_file_bytes"],
                                                  self.values["send_directories"])
        except FileRefused as exc:
            self._count("files_failed", str(exc))
            self.get_logger().warning(f"send_file refused: {exc}")
            response.message = str(exc)
            return response
        expected = self._sessions.expect(int(request.dest), len(data))
        self._transfer = _Transfer(response, expected,
                                   now_s(self) + self.values["send_timeout_s"])
        self._file_pub.publish(FileTransfer(dest=int(request.dest) & 0xFF, name=name,
                                            data=list(data), sha256=list(digest)))
        self._count("files_sent", None)
        self.get_logger().info(f"sending {name} ({len(data)} bytes) to {request.dest}")
        return self._service.defer(response)

    def _on_status(self, status: FragmentationStatus) -> None:
        transfer = self._transfer
        claimed = transfer is not None and transfer.expected.claims(status)
        self._sessions.heard(status, stamp_seconds(status.header.stamp))
        if not claimed:
            return
        self._progress_pub.publish(status)
        transfer.response.blocks = status.payload_size_blocks
        if status.state == FragmentationStatus.STATE_COMPLETED:
            self._finish(True, f"all {status.payload_size_blocks} blocks acknowledged")
        elif status.state == FragmentationStatus.STATE_EXPIRED:
            self._finish(False, f"session expired with {status.acked_blocks}/"
                                f"{status.payload_size_blocks} blocks acknowledged")

    def _check_deadline(self) -> None:
        transfer = self._transfer
        if transfer is not None and now_s(self) >= transfer.deadline_s:
            self._finish(False, f"not acknowledged within send_timeout_s "
                                f"{self.values['send_timeout_s']:.0f} s")

    def _finish(self, success: bool, message: str) -> None:
        transfer, self._transfer = self._transfer, None
        if transfer is None:
            return
        transfer.response.success, transfer.response.message = success, message
        self._count("files_acknowledged" if success else "files_failed",
                    None if success else message)
        # One call site per severity: rclpy refuses a call site whose severity changes.
        line = f"send_file to {transfer.dest}: {message}"
        if success:
            self.get_logger().info(line)
        else:
            self.get_logger().warning(line)
        if self._service is not None:
            self._service.complete(transfer.response)

    # -- receiving --------------------------------------------------------------------------------
    def _on_file(self, msg: FileTransfer) -> None:
        try:
            path = write_received(self.values["receive_directory"], msg.name, bytes(msg.data),
                                  bytes(msg.sha256), self.values["overwrite"])
        except FileRefused as exc:
            self._count(exc.counter, f"file from {msg.src} refused: {exc}")
            self.get_logger().warning(self.last_error)
            return
        self._count("files_received", None)
        self.get_logger().info(f"received {path} ({len(msg.data)} bytes) from "
                               f"{msg.src}")

    def _count(self, counter: str, error: str | None) -> None:
        self.counts[counter] += 1
        if error:
            self.last_error = error
        if self._diagnostics_pub is not None:
            self._diagnostics_pub.publish(counters_diagnostics(
                self.get_fully_qualified_name(), self.last_error or "ok", self.counts,
                seconds_to_time_msg(now_s(self))))


def main(args=None) -> int:
    return run_node(FileTransferNode, args)


if __name__ == "__main__":
    sys.exit(main())
