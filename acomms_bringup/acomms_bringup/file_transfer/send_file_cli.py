"""acomms_send_file DEST PATH: send a file through a vehicle's file_transfer_node.

Calls `<namespace>/send_file` and shows the progress of its file's fragment session (blocks
acknowledged, from file_transfer_node's `<namespace>/send_file_progress`, which carries that
session's statuses only) until the service answers. Exit status: 0 only when the receiver
acknowledged every block; 1 when the transfer failed or was refused; 2 when the service is not
there or did not answer within --timeout. The timeouts are wall-clock seconds (how long to wait
for an answer); the tool never reads ROS time, so it works the same against a simulation at any
warp and any simulated date. A short-lived client (a plain rclpy node, like other command-line
tools), not part of a vehicle's stack. The node reads the file itself, so PATH (made absolute
here) must lie inside the node's `send_directories` (default: the node's working directory);
otherwise the refusal names the reason and the exit status is 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

BAR = 30
SERVICE_WAIT_S = 30.0   # wall clock: how long the send_file service may take to appear


def progress_line(acked: int, total: int, session: int | None = None) -> str:
    filled = BAR * acked // total if total else 0
    prefix = "" if session is None else f"session {session}: "
    return f"{prefix}[{'#' * filled}{'.' * (BAR - filled)}] {acked}/{total} blocks acknowledged"


class Progress:
    """The progress line of the tool's own session: file_transfer_node reports only the session
    of the file it is sending (and refuses a request while one is in flight), so the first open
    session it reports is this request's; finished statuses before it (an earlier file's last
    one, still on its way) and other session ids are not shown."""

    def __init__(self, dest: int):
        self.dest, self.session, self.line = dest, None, ""

    def update(self, status) -> str | None:
        """The new line for this status, or None (another session, or nothing changed)."""
        if not status.outgoing or status.fragment_dest != self.dest:
            return None
        if self.session is None:
            if status.state != 0:        # FragmentationStatus.STATE_OPEN
                return None
            self.session = status.sequence_num
        if status.sequence_num != self.session:
            return None
        line = progress_line(status.acked_blocks, status.payload_size_blocks, self.session)
        if line == self.line:
            return None
        self.line = line
        return line


def parse(argv):
    parser = argparse.ArgumentParser(prog="acomms_send_file", description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=int, help="destination modem address (0..255)")
    parser.add_argument("path", help="file to send (inside the node's send_directories)")
    parser.add_argument("--namespace", default="", help="the sending vehicle's namespace")
    parser.add_argument("--timeout", type=float, default=7200.0,
                        help="wall-clock seconds to wait for the answer (default 7200), "
                             "however fast the simulation runs")
    args = parser.parse_args(argv)
    if not 0 <= args.dest <= 255:
        parser.error(f"DEST {args.dest} is not a modem address 0..255")
    return args


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    import rclpy
    from rclpy.node import Node

    from acomms_interfaces.msg import FragmentationStatus
    from acomms_interfaces.srv import SendFile

    rclpy.init()
    node = Node("acomms_send_file", namespace=args.namespace or None)
    progress = Progress(args.dest)

    def on_status(status):
        line = progress.update(status)
        if line:
            print(f"\r{line}", end="", flush=True)

    node.create_subscription(FragmentationStatus, "send_file_progress", on_status, 50)
    client = node.create_client(SendFile, "send_file")
    try:
        if not client.wait_for_service(timeout_sec=min(args.timeout, SERVICE_WAIT_S)):
            print(f"acomms_send_file: no service {client.srv_name}", file=sys.stderr)
            return 2
        future = client.call_async(SendFile.Request(dest=args.dest,
                                                    path=os.path.abspath(args.path)))
        deadline = time.monotonic() + args.timeout   # wall clock: an I/O timeout
        while not future.done() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.2)
        if not future.done():
            print(f"\nacomms_send_file: no answer within {args.timeout:.0f} s "
                  "(wall clock)", file=sys.stderr)
            return 2
        result = future.result()
        if result.success:
            print(f"\r{progress_line(result.blocks, result.blocks, progress.session)}\n"
                  f"sent: {result.message}")
            return 0
        print(f"\nacomms_send_file: failed: {result.message}", file=sys.stderr)
        return 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
