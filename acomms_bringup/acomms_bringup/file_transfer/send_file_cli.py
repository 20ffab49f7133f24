"""acomms_send_file DEST PATH: send a file through a vehicle's file_transfer_node.

Calls `<namespace>/send_file` and shows progress (blocks acknowledged, from the queue node's
`<namespace>/fragmentation_status`) until the service answers. Exit status: 0 only when the
receiver acknowledged every block; 1 when the transfer failed or was refused; 2 when the
service is not there or did not answer within --timeout (wall seconds). A short-lived client
(a plain rclpy node, like other command-line tools), not part of a vehicle's stack.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

BAR = 30


def progress_line(acked: int, total: int) -> str:
    filled = BAR * acked // total if total else 0
    return f"[{'#' * filled}{'.' * (BAR - filled)}] {acked}/{total} blocks acknowledged"


def parse(argv):
    parser = argparse.ArgumentParser(prog="acomms_send_file", description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=int, help="destination modem address (0..255)")
    parser.add_argument("path", help="file to send")
    parser.add_argument("--namespace", default="", help="the sending vehicle's namespace")
    parser.add_argument("--timeout", type=float, default=7200.0, help="wall seconds to wait")
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
    shown = {"line": ""}

    def on_status(status):
        if status.outgoing and status.fragment_dest == args.dest:
            line = progress_line(status.acked_blocks, status.payload_size_blocks)
            if line != shown["line"]:
                shown["line"] = line
                print(f"\r{line}", end="", flush=True)

    node.create_subscription(FragmentationStatus, "fragmentation_status", on_status, 50)
    client = node.create_client(SendFile, "send_file")
    try:
        if not client.wait_for_service(timeout_sec=min(args.timeout, 10.0)):
            print(f"acomms_send_file: no service {client.srv_name}", file=sys.stderr)
            return 2
        future = client.call_async(SendFile.Request(dest=args.dest,
                                                    path=os.path.abspath(args.path)))
        deadline = time.monotonic() + args.timeout
        while not future.done() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.2)
        if not future.done():
            print(f"\nacomms_send_file: no answer within {args.timeout:.0f} s", file=sys.stderr)
            return 2
        result = future.result()
        if result.success:
            print(f"\r{progress_line(result.blocks, result.blocks)}\nsent: {result.message}")
            return 0
        print(f"\nacomms_send_file: failed: {result.message}", file=sys.stderr)
        return 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
