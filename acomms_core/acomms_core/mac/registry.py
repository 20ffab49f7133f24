"""MAC kinds by name (a scenario's `mac.kind`): policy, parameters, status, node. ROS-free.

Adding a MAC kind: one policy module in acomms_core/mac/ (parameter specs, validator, decisions)
plus one line here. The node serving it is named by `plugin` ("module:Class") and `executable`
(its console script); kinds whose node only needs the queue and the modem use the generic
`mac_node` (a `MacNode` that reads the read-only `mac_kind` parameter).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.carrier_sense import CarrierSensePolicy
from acomms_core.mac.polled import PolledPolicy
from acomms_core.mac.slotted_aloha import TdmaSlottedAlohaPolicy
from acomms_core.mac.tdma import TdmaPolicy
from acomms_core.mac.tdma_advanced import TdmaAdvancedPolicy
from acomms_core.mac.tdma_scripted import TdmaScriptedPolicy
from acomms_core.ros.parameter_spec import ParameterSpec, check_values, defaults, spec_table

# Names a MAC node uses that belong to its vehicle, not to the MAC: a MAC in a sub-namespace of
# the vehicle (one of several managed by mac_switcher_node) has them remapped to the vehicle's.
MAC_VEHICLE_INTERFACES = ("get_next_packet_data", "queue_tx_packet", "ping_modem",
                          "ping_transponders", "cst", "reception_events", "reception_start",
                          "nmea_to_modem")


def ros_parameter_values(specs, values: Mapping[str, Any]) -> dict[str, Any]:
    """Values as ROS parameters carry them (what a launch file or the runner passes): an
    integer for a double parameter becomes a float, and a list mixing ints and strings (a
    slot list such as [0, "2:3"]) one comma-separated string. Others stay as they are."""
    table = spec_table(specs)
    result = {}
    for name, value in values.items():
        spec = table.get(name)
        if (spec is not None and spec.type_name == "double" and isinstance(value, int)
                and not isinstance(value, bool)):
            value = float(value)
        elif (spec is not None and spec.dynamic_typing and isinstance(value, list)
              and len({type(item) for item in value}) > 1):
            value = ",".join(str(item) for item in value)
        result[name] = value
    return result


@dataclasses.dataclass(frozen=True)
class MacKind:
    policy: type                 # policy class: PARAMETERS, validate(values), decisions
    status_type: str             # "pkg/msg/Type" of the status message
    status_topic: str
    executable: str              # console script of the node
    plugin: str                  # "module:Class" of the node (composition, embedded runner)
    package: str = "acomms_core"
    # Parameters the stack always sets for this kind (e.g. mac_kind for the generic mac_node).
    fixed_parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # Parameters the stack fills from the vehicle when the scenario does not set them ("src").
    vehicle_parameters: tuple[str, ...] = ()

    @property
    def parameters(self) -> tuple[ParameterSpec, ...]:
        return self.policy.PARAMETERS

    def validate(self, values: Mapping[str, Any]) -> str | None:
        """The node's pure validator over the merged candidate values of every parameter."""
        return self.policy.validate(values)

    def check(self, values: Mapping[str, Any]) -> str | None:
        """What the node would say about these start-up values (others default): reason or
        None. Types and ranges first (ParameterSpec.check_value), then the validator."""
        return check_values(self.parameters, values, self.validate)

    def ros_values(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Values as ROS parameters carry them (`ros_parameter_values`)."""
        return ros_parameter_values(self.parameters, values)

    def config(self, values: Mapping[str, Any]):
        """The policy's configuration for these values (others default); ScheduleError."""
        return self.policy.build_config({**defaults(self.parameters), **values})


MAC_KINDS: dict[str, MacKind] = {
    "tdma": MacKind(TdmaPolicy, "acomms_interfaces/msg/TdmaStatus", "tdma_status",
                    "tdma_node", "acomms_core.nodes.tdma_node:TdmaNode"),
    "tdma_advanced": MacKind(TdmaAdvancedPolicy, "acomms_interfaces/msg/TdmaAdvancedStatus",
                             "tdma_advanced_status", "tdma_advanced_node",
                             "acomms_core.nodes.tdma_advanced_node:TdmaAdvancedNode"),
    "tdma_scripted": MacKind(TdmaScriptedPolicy, "acomms_interfaces/msg/TdmaScriptedStatus",
                             "tdma_scripted_status", "tdma_scripted_node",
                             "acomms_core.nodes.tdma_scripted_node:TdmaScriptedNode"),
    "tdma_slotted_aloha": MacKind(
        TdmaSlottedAlohaPolicy, "acomms_interfaces/msg/TdmaSlottedAlohaStatus",
        "tdma_slotted_aloha_status", "tdma_slotted_aloha_node",
        "acomms_core.nodes.tdma_slotted_aloha_node:TdmaSlottedAlohaNode"),
    "carrier_sense": MacKind(CarrierSensePolicy, "acomms_interfaces/msg/CarrierSenseStatus",
                             "carrier_sense_status", "carrier_sense_node",
                             "acomms_core.nodes.carrier_sense_node:CarrierSenseNode"),
    "polled": MacKind(PolledPolicy, "acomms_interfaces/msg/PolledStatus", "polled_status",
                      "mac_node", "acomms_core.nodes.mac_node:MacNode",
                      fixed_parameters={"mac_kind": "polled"}, vehicle_parameters=("src",)),
}


def mac_kind(kind: str) -> MacKind:
    """The registered kind; ValueError naming the known ones."""
    try:
        return MAC_KINDS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"unknown MAC kind {kind!r}; known: {', '.join(sorted(MAC_KINDS))}"
                         ) from None
