"""docs/reference/registries.md: MAC kinds, packet codecs, modem profiles, bridges.

Each section is read from its registry: acomms_core.mac.registry.MAC_KINDS,
acomms_core.codecs.registry.PACKET_CODECS (built-in codecs only: custom ones register at run
time), acomms_core.modems.registry.MODEM_PROFILES, acomms_bringup.bridges.registry.BRIDGES and
SERVICE_TABLES.
"""

from __future__ import annotations

import inspect

from reference_pages.markdown import code, table


def _first_line(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def _mac_kinds() -> str:
    from acomms_core.mac.registry import MAC_KINDS

    rows = []
    for name in sorted(MAC_KINDS):
        kind = MAC_KINDS[name]
        fixed = ", ".join(f"{key}={value}" for key, value in sorted(kind.fixed_parameters.items()))
        rows.append((f"`{name}`", f"`{kind.executable}`", f"`{kind.status_topic}`",
                     f"`{kind.status_type}`", ", ".join(f"`{s.name}`" for s in kind.parameters),
                     fixed, _first_line(kind.policy)))
    return ("## MAC kinds\n\nFrom `acomms_core.mac.registry.MAC_KINDS` (a scenario's `mac.kind`). "
            "Parameter details: [nodes.md](nodes.md) under the executable.\n\n"
            + table(("kind", "executable", "status topic", "status type", "parameters",
                     "fixed parameters", "policy"), rows))


def _packet_codecs() -> str:
    from acomms_core.codecs.registry import BUILT_IN

    rows = [(f"`{entry.name}`", f"`{entry.factory.__module__}.{entry.factory.__qualname__}`",
             ", ".join(f"`{option}`" for option in entry.options), _first_line(entry.factory))
            for entry in sorted(BUILT_IN, key=lambda entry: entry.name)]
    return ("## Packet codecs\n\nBuilt-in entries of `acomms_core.codecs.registry.BUILT_IN` "
            "(`packet_codec: <name>` in a codec YAML); custom codecs register themselves from "
            "`custom_packet_codec_paths` at run time.\n\n"
            + table(("name", "factory", "extra YAML keys", "description"), rows))


def _modem_profiles() -> str:
    from acomms_core.modems.registry import DEFAULT_MODEM_PROFILE, MODEM_PROFILES

    parts = ["## Modem profiles\n\nFrom `acomms_core.modems.registry.MODEM_PROFILES` (the "
             f"`modem_profile` parameter; default {code(DEFAULT_MODEM_PROFILE)}).\n"]
    for name in sorted(MODEM_PROFILES):
        profile = MODEM_PROFILES[name]
        rows = [(rate, info.modulation, "yes" if info.fdp else "no", info.max_miniframe_bytes,
                 info.max_dataframe_bytes, f"{info.packet_duration_s:g}",
                 f"{info.bit_rate_bps:g}")
                for rate, info in sorted(profile.rates.items())]
        about = " ".join(filter(None, (f"Broadcast address {profile.broadcast_address}.",
                                       _first_line(type(profile)))))
        parts.append(f"### `{name}`\n\n{about}\n\n"
                     + table(("rate", "modulation", "FDP", "miniframe bytes", "dataframe bytes",
                              "packet s", "bit rate bps"), rows))
    return "\n".join(parts)


def _bridges() -> str:
    from acomms_bringup.bridges.registry import BRIDGES, SERVICE_TABLES

    rows = [(f"`{name}`", f"`{kind.plugin}`", kind.description,
             f"`{kind.start_parameter}`" if kind.start_parameter else "")
            for name, kind in sorted(BRIDGES.items())]
    tables = [(f"`{name}`", ", ".join(f"`{service}`" for service in _service_names(services)))
              for name, services in sorted(SERVICE_TABLES.items())]
    return ("## Bridges\n\nFrom `acomms_bringup.bridges.registry.BRIDGES` (a scenario's "
            "`vehicles[i].bridges`; the kind is also the executable).\n\n"
            + table(("kind", "node class", "description", "start parameter"), rows)
            + "\nService tables (`service_table` parameter, `SERVICE_TABLES`; in id order):\n\n"
            + table(("table", "services"), tables))


def _service_names(services) -> list[str]:
    """In table order (a service's id is its position)."""
    return [f"{service.name} ({service.srv_type})" if hasattr(service, "srv_type")
            else str(getattr(service, "name", service)) for service in services]


def registries_page() -> str:
    return "\n".join(["# Registries reference\n",
                      "Everything a scenario or a parameter names by kind, generated from the "
                      "registries in the code.\n",
                      _mac_kinds(), _packet_codecs(), _modem_profiles(), _bridges()])
