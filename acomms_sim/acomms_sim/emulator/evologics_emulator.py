"""EvoLogics S2C emulator: `EvologicsModel`s on pseudo-terminals, on the simulated channel.

    evologics_emulator --modem 1:0,0,2:usbl --modem 2:600,300,50
        # modem 1 (a USBL) at 0 m north, 0 m east, 2 m depth; modem 2 at 600 m N, 300 m E, 50 m
    evologics_emulator --modem 1:0,0,2:usbl --modem 2:600,300,50 --link-dir /tmp/s2c
        # the same, and /tmp/s2c/modem1, /tmp/s2c/modem2 link to the ptys

Each modem is served on its own pseudo-terminal (the printed path; a driver opens it as a serial
port) and speaks the S2C AT protocol (`acomms_sim.emulator.evologics_model`); they hear each other
through `SimChannelBackend` with the default channel of `micromodem_emulator --network`. A USBL
modem reports `USBLLONG` / `USBLANGLES` with the seeded default error model
(`acomms_sim.emulator.usbl_errors`; `--usbl-seed`). The bytes are passed through unsplit, so
binary payloads survive. ROS-free. TCP ports are not served yet (tcp_serving is line-oriented).
"""

from __future__ import annotations

import argparse
import os
import sys

from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.evologics_model import MAX_ADDRESS, EvologicsModel
from acomms_sim.emulator.micromodem_emulator import (
    PtyServer,
    _wait_for_signal,
    channel_backend_from_spec,
)
from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.physics.geodesy import offset_position

ORIGIN = (41.5, -70.6)  # where the north/east offsets start (any open-water point)


class RawPtyServer(PtyServer):
    """A pty for a byte-stream model: host bytes go to `model.feed` unsplit."""

    def __init__(self, model: EvologicsModel, link: str | None = None):
        super().__init__(model, link)
        model.output = self.write_bytes

    def _feed(self, data: bytes) -> None:
        self.model.feed(data)


def parse_modem(text: str) -> dict:
    """"ADDRESS:NORTH,EAST,DEPTH[:usbl]" -> dict; ValueError with the expected form."""
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "usbl"):
            raise ValueError
        north, east, depth = (float(v) for v in parts[1].split(","))
        address = int(parts[0])
    except ValueError:
        raise ValueError(f"--modem {text!r}: expected ADDRESS:NORTH,EAST,DEPTH[:usbl]") from None
    if not 1 <= address <= MAX_ADDRESS:
        raise ValueError(f"--modem {text!r}: address must be 1..{MAX_ADDRESS}")
    return {"address": address, "north": north, "east": east, "depth": depth,
            "usbl": len(parts) == 3}


def start_modems(specs: list[dict], usbl_seed: int = 0,
                 backend: SimChannelBackend | None = None, link_dir: str | None = None):
    """(backend, [(model, server)]) with every modem placed and served; ValueError if bad.
    `link_dir`: also a stable symlink `<link_dir>/modem<ADDRESS>` to each pty."""
    backend = backend or channel_backend_from_spec(None)
    if link_dir:
        os.makedirs(link_dir, exist_ok=True)
    served = []
    for spec in specs:
        latitude, longitude = offset_position(*ORIGIN, spec["north"], spec["east"])
        backend.set_position(spec["address"], latitude, longitude, spec["depth"])
        link = os.path.join(link_dir, f"modem{spec['address']}") if link_dir else None
        served.append(serve_modem(backend, spec["address"],
                                  UsblErrorModel(seed=usbl_seed) if spec["usbl"] else None, link))
    return backend, served


def serve_modem(backend: SimChannelBackend, address: int, usbl: UsblErrorModel | None,
                link: str | None = None) -> tuple[EvologicsModel, RawPtyServer]:
    """One modem on the backend (it needs a position there to transmit), served on a new pty;
    a USBL one when `usbl` is given. Close the server, then the model."""
    model = EvologicsModel(address, backend, usbl=usbl, relative_position=backend.relative_enu)
    server = RawPtyServer(model, link)
    server.start()
    return model, server


def main(args=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("Each modem")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modem", action="append", default=[], required=True,
                        metavar="ADDRESS:NORTH,EAST,DEPTH[:usbl]", help="one emulated modem")
    parser.add_argument("--usbl-seed", type=int, default=0, help="seed of the USBL errors")
    parser.add_argument("--link-dir", metavar="DIR", help="also link DIR/modem<ADDRESS> to each "
                        "modem's pty (a stable path for a driver's modem_serial_port)")
    options = parser.parse_args(args)
    try:
        specs = [parse_modem(text) for text in options.modem]
        backend, served = start_modems(specs, options.usbl_seed, link_dir=options.link_dir)
    except (ValueError, OSError) as exc:
        print(f"evologics_emulator: {exc}", file=sys.stderr)
        return 2
    for model, server in served:
        print(f"evologics_emulator: address {model.src}"
              f"{' (usbl)' if model.usbl else ''}: {server.path}"
              f"{f' (link {server.link})' if server.link else ''}", flush=True)
    try:
        _wait_for_signal()
    finally:
        for model, server in served:
            server.close()
            model.close()
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
