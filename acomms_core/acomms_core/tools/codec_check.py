"""acomms_codec_check CONFIG.yaml: check a codec config and show what its messages cost on the wire.

    acomms_codec_check acomms_bringup/config/demo_codecs.yaml [--modem-profile micromodem2]
                       [--custom-packet-codec-path PATH ...] [--json]

Loads the config exactly as message_queue_node and packet_dispatch_node do
(`acomms_core.codecs.load_codec_config`; a bad config exits 1 with the loader's one-line reason
naming the file, codec and field). Then, for every message codec: its ROS type and topics, the
encoded size in bits (min / max; the checksum included), what one message costs in a packet of
its packet codec (`PacketCodec.message_cost_bits`, framing included), each field's codec and
resolution, and for every rate of the modem profile the payload of a full packet at that rate
(`ModemProfile.frame_budget` → `PacketCodec.payload_capacity_bits`) and how many of the largest
messages fit in it (0: does not fit). Rates where a packet codec has no payload room are named
once per packet codec, with the reason (`unusable_reason`; e.g. legacy rates have no miniframe
for the codec's header). ROS-free apart from importing the message types.
"""

from __future__ import annotations

import argparse
import json
import sys

from acomms_core.codecs import load_codec_config
from acomms_core.modems.registry import MODEM_PROFILE_PARAMETER, MODEM_PROFILES, modem_profile


def field_resolution(params: dict) -> str:
    """A field's resolution in words, from its field codec parameters (ltcodecs' names)."""
    codec = params.get("codec", "?")
    if "resolution" in params:
        return f"{params['resolution']:g}"
    if "precision" in params and codec in ("float", "time", "timestamp"):
        return f"{10.0 ** -int(params['precision']):g}" + (" s" if codec != "float" else "")
    if "num_bits" in params and "min_value" in params and "max_value" in params:
        steps = 2 ** int(params["num_bits"]) - 1
        return f"{(float(params['max_value']) - float(params['min_value'])) / steps:.6g}"
    if "max_length" in params:
        return f"max {params['max_length']} items"
    if codec in ("integer", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "bool", "string", "bytes"):
        return "exact"
    return "-"


def field_rows(fields: dict, prefix: str = "") -> list[dict]:
    """One row per leaf field (nested `msg` codecs flattened as a.b): name, codec, resolution."""
    rows = []
    for name, params in (fields or {}).items():
        path = f"{prefix}{name}"
        if isinstance(params, dict) and isinstance(params.get("fields"), dict):
            rows += field_rows(params["fields"], path + ".")
        elif isinstance(params, dict):
            rows.append({"field": path, "codec": params.get("codec", "?"),
                         "resolution": field_resolution(params)})
    return rows


def unusable_reason(packet_codec, name: str, budget) -> str:
    """Why the packet codec has no payload room in a packet of this frame budget."""
    mini, data = budget.maximum_miniframe_bytes, budget.maximum_dataframe_bytes
    header = len(getattr(packet_codec, "miniframe_header", b""))
    if mini == 0 and header > 0:
        return (f"their packets have no miniframe (legacy, not FDP) and {name}'s {header}-byte "
                "header goes in the miniframe")
    return f"{name} has no payload room in {mini} miniframe + {data} dataframe bytes"


def rate_rows(packet_codec, message_cost_bits: int, profile, name: str = "") -> list[dict]:
    """Per rate: payload bits of a full packet and how many largest messages fit in it (and
    why the packet codec cannot use the rate when it has no payload room there)."""
    rows = []
    for rate in sorted(profile.rates):
        try:
            budget = profile.frame_budget(rate, rate)
        except ValueError:
            continue
        capacity = packet_codec.payload_capacity_bits(budget.maximum_miniframe_bytes,
                                                      budget.maximum_dataframe_bytes)
        rows.append({"rate": rate, "packet_bytes": budget.budget_bytes,
                     "payload_bits": capacity,
                     "messages_per_packet": capacity // message_cost_bits
                     if message_cost_bits > 0 else 0,
                     "unusable": (unusable_reason(packet_codec, name, budget) if capacity == 0
                                  else None)})
    return rows


def check(path: str, profile_name: str, custom_paths=()) -> dict:
    """The report as plain data (what --json prints); CodecConfigError for a bad config."""
    from acomms_core.codecs import CodecConfigError
    from acomms_core.security import SecurityConfigError
    from acomms_core.security.node_hooks import secured_codecs

    config = load_codec_config(path, custom_paths)
    try:  # parsing reads no key file (the nodes read it at configure): a check does it here
        for secured in secured_codecs(config):
            secured.load_keys()
    except SecurityConfigError as exc:
        raise CodecConfigError(f"{path}: security: {exc}") from None
    profile = modem_profile(profile_name)
    codecs = []
    for packet in config.packet_codecs:
        packet_codec = packet.packet_codec
        for message in packet.message_codecs:
            codec = message.codec
            min_bits = codec.body_min_bits + codec.checksum_bits
            max_bits = codec.body_max_bits + codec.checksum_bits
            cost = packet_codec.message_cost_bits(max_bits)
            codecs.append({
                "id": message.id, "ros_type": message.ros_type,
                "subscribe_topic": message.subscribe_topic,
                "publish_topic": message.publish_topic, "packet_codec": packet.codec_name,
                "min_bits": min_bits, "max_bits": max_bits, "max_cost_in_packet_bits": cost,
                "fields": field_rows(codec.fields_config),
                "rates": rate_rows(packet_codec, cost, profile, packet.codec_name)})
    return {"file": path, "modem_profile": profile_name, "warnings": list(config.warnings),
            "message_codecs": codecs}


def unusable_lines(report: dict) -> list[str]:
    """Once per packet codec and reason: the rates it cannot use and why."""
    reasons: dict[tuple[str, str], list[int]] = {}
    for c in report["message_codecs"]:
        for r in c["rates"]:
            if r.get("unusable"):
                rates = reasons.setdefault((c["packet_codec"], r["unusable"]), [])
                if r["rate"] not in rates:
                    rates.append(r["rate"])
    return [f"packet codec {codec} cannot use rates {', '.join(str(r) for r in rates)}: {why}"
            for (codec, why), rates in reasons.items()]


def format_report(report: dict) -> str:
    lines = [f"{report['file']}: {len(report['message_codecs'])} message codecs, OK "
             f"(modem profile {report['modem_profile']})"]
    lines += [f"warning: {w}" for w in report["warnings"]]
    lines += unusable_lines(report)
    for c in report["message_codecs"]:
        lines += ["", f"[{c['id']}] {c['ros_type']}  {c['subscribe_topic']} -> "
                  f"{c['publish_topic']}  (packet codec {c['packet_codec']})",
                  f"  encoded size: {c['min_bits']} bits min, {c['max_bits']} bits max; "
                  f"{c['max_cost_in_packet_bits']} bits in a packet (framing included)",
                  f"  {'field':<32} {'codec':<18} resolution"]
        lines += [f"  {f['field']:<32} {f['codec']:<18} {f['resolution']}" for f in c["fields"]]
        fits = [r for r in c["rates"] if r["messages_per_packet"] > 0]
        lines.append("  fits at rates: " + (", ".join(
            f"{r['rate']} ({r['messages_per_packet']} per {r['payload_bits']}-bit packet)"
            for r in fits) or "none"))
        too_small = [str(r["rate"]) for r in c["rates"]
                     if r["messages_per_packet"] == 0 and r["payload_bits"] > 0]
        if too_small:
            lines.append(f"  too large for rates: {', '.join(too_small)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """acomms_codec_check: validate a codec config, print sizes, resolutions and rates."""
    parser = argparse.ArgumentParser(prog="acomms_codec_check", description=main.__doc__)
    parser.add_argument("config", help="codec config YAML (ros_acomms schema)")
    parser.add_argument("--modem-profile", default=MODEM_PROFILE_PARAMETER.default,
                        choices=sorted(MODEM_PROFILES), help="rates of this modem")
    parser.add_argument("--custom-packet-codec-path", action="append", default=[],
                        metavar="PATH", help="custom packet codec module or folder (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    arguments = parser.parse_args(argv)
    try:
        report = check(arguments.config, arguments.modem_profile,
                       tuple(arguments.custom_packet_codec_path))
    except (ValueError, OSError) as exc:
        print(f"acomms_codec_check: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=1) if arguments.json else format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
