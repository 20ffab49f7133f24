"""Every acomms message and service builds populated and survives CDR serialization.

The interfaces are discovered from msg/ and srv/ so that a file added later is covered too.
"""

import array
import math
import pathlib

import pytest
from rclpy.serialization import deserialize_message, serialize_message

PKG_DIR = pathlib.Path(__file__).resolve().parents[1]
MESSAGES = sorted(p.stem for p in (PKG_DIR / "msg").glob("*.msg"))
SERVICES = sorted(p.stem for p in (PKG_DIR / "srv").glob("*.srv"))

REQUIRED_MESSAGES = {
    "Packet", "ReceivedPacket", "TransmittedPacket", "CST", "XST", "EncodedAck",
    "FragmentationStatus", "ModemSensorData", "NeighborReachability", "QueueStatus",
    "SummaryMessageCount", "SimPacket", "SoundSpeedProfile", "Source", "TdmaStatus",
    "TdmaAdvancedStatus", "TdmaScriptedStatus", "Tick", "Tock", "UpdateQueuedMessage",
}
REQUIRED_SERVICES = {
    "QueueTxPacket", "GetNextPacketData", "PriorityUpdate", "QueueActive", "PingModem",
    "PingTransponders", "GetPlatformLocation", "SimTransmissionLoss", "SimPacketPerformance",
    "GetOptimalTxDepth", "GetNextQueuedMessage",
}


def _message_class(type_name):
    """Resolve 'pkg/Type' or 'pkg/msg/Type' to its generated class."""
    import importlib

    parts = type_name.split("/")
    pkg, name = parts[0], parts[-1]
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def _sample_scalar(type_name, seed):
    """A value of the given rosidl basic type that is not its default."""
    if type_name == "boolean":
        return True
    if type_name in ("string", "wstring"):
        return f"s{seed}"
    if type_name in ("float", "double"):
        return 0.5 + seed
    if type_name in ("octet", "char", "uint8", "int8"):
        return 1 + seed % 100
    return 1 + seed


def _populate(msg, depth=0):
    """Fill every field of msg with distinct non-default values, recursing into sub-messages."""
    from rosidl_parser.definition import (
        AbstractNestedType,
        AbstractString,
        Array,
        BasicType,
        BoundedSequence,
        NamespacedType,
    )

    for seed, ((field, _), slot_type) in enumerate(
        zip(msg.get_fields_and_field_types().items(), msg.SLOT_TYPES, strict=True)
    ):
        if isinstance(slot_type, AbstractNestedType):
            element = slot_type.value_type
            if isinstance(slot_type, Array):
                count = slot_type.size
            elif isinstance(slot_type, BoundedSequence):
                count = min(2, slot_type.maximum_size)
            else:
                count = 2
            if isinstance(element, NamespacedType):
                cls = _message_class("/".join(element.namespaces + [element.name]))
                values = []
                for _ in range(count):
                    sub = cls()
                    _populate(sub, depth + 1)
                    values.append(sub)
            elif isinstance(element, AbstractString):
                values = [f"e{seed}{i}" for i in range(count)]
            else:
                values = [_sample_scalar(element.typename, seed + i) for i in range(count)]
            setattr(msg, field, values)
        elif isinstance(slot_type, NamespacedType):
            sub = getattr(msg, field)
            _populate(sub, depth + 1)
        elif isinstance(slot_type, AbstractString):
            limit = getattr(slot_type, "maximum_size", None)
            setattr(msg, field, f"{field}-{seed}"[:limit])
        elif isinstance(slot_type, BasicType):
            setattr(msg, field, _sample_scalar(slot_type.typename, seed))
        else:  # pragma: no cover - a new rosidl type would need handling here
            raise AssertionError(f"unhandled type {slot_type!r} for {field}")


def _assert_equal(a, b, path="msg"):
    if hasattr(a, "get_fields_and_field_types"):
        assert type(a) is type(b), path
        for field in a.get_fields_and_field_types():
            _assert_equal(getattr(a, field), getattr(b, field), f"{path}.{field}")
    elif isinstance(a, (list, tuple, array.array)) or type(a).__name__ == "ndarray":
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=1e-6), path
    else:
        assert a == b, path


def _roundtrip(cls):
    original = cls()
    _populate(original)
    data = serialize_message(original)
    copy = deserialize_message(data, cls)
    _assert_equal(original, copy)
    assert copy != cls() or not cls.get_fields_and_field_types()


def test_required_interfaces_exist():
    assert REQUIRED_MESSAGES <= set(MESSAGES)
    assert REQUIRED_SERVICES <= set(SERVICES)


@pytest.mark.parametrize("name", MESSAGES)
def test_message_roundtrip(name):
    import acomms_interfaces.msg as msgs

    _roundtrip(getattr(msgs, name))


@pytest.mark.parametrize("name", SERVICES)
def test_service_roundtrip(name):
    import acomms_interfaces.srv as srvs

    srv = getattr(srvs, name)
    _roundtrip(srv.Request)
    _roundtrip(srv.Response)


def _constants(path):
    """(name, literal) of every constant line in a .msg/.srv file."""
    found = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line and not line.startswith("---"):
            decl, value = line.split("=", 1)
            found.append((decl.split()[-1], value.strip()))
    return found


@pytest.mark.parametrize("name", MESSAGES + SERVICES)
def test_constants_exist(name):
    import acomms_interfaces.msg as msgs
    import acomms_interfaces.srv as srvs

    if name in MESSAGES:
        path, owners = PKG_DIR / "msg" / f"{name}.msg", [getattr(msgs, name)]
    else:
        srv = getattr(srvs, name)
        path, owners = PKG_DIR / "srv" / f"{name}.srv", [srv.Request, srv.Response]
    for constant, literal in _constants(path):
        owner = next((o for o in owners if hasattr(o, constant)), None)
        assert owner is not None, f"{name}.{constant} missing"
        value = getattr(owner, constant)
        if isinstance(value, (int, float)):
            assert value == type(value)(float(literal)), f"{name}.{constant}"


def test_specific_constants_and_fixed_names():
    from acomms_interfaces.msg import CST, Packet, ReceivedPacket, Tick, Tock
    from acomms_interfaces.srv import QueueTxPacket, SimTransmissionLoss

    for const in ("PACKET_TYPE_UNKNOWN", "PACKET_TYPE_AUTO", "PACKET_TYPE_FSK",
                  "PACKET_TYPE_LEGACY_PSK", "PACKET_TYPE_FDP"):
        assert hasattr(Packet, const)
    for const in ("QUEUE_IMMEDIATE", "QUEUE_PPS", "QUEUE_TXTRIG"):
        assert hasattr(QueueTxPacket.Request, const)
    assert "position_in_queue" in QueueTxPacket.Response.get_fields_and_field_types()
    assert ReceivedPacket.get_fields_and_field_types()["packet"] == "acomms_interfaces/Packet"
    fields = SimTransmissionLoss.Request.get_fields_and_field_types()
    assert {"rcv_latitude", "rcv_longitude", "rcv_depth"} <= set(fields)
    assert any(c.startswith("STATUS_") for c in dir(Tick)) or any(
        c.startswith("STATUS_") for c in dir(Tock))
    assert len(CST.get_fields_and_field_types()) >= 34


def test_tdma_status_messages_are_flat_as_ros_acomms():
    """Each extended TDMA status repeats its parent's fields first, in order, at the top level
    (no nested status), as ros_acomms publishes them (issue 19)."""
    from acomms_interfaces import msg

    def fields(name):
        return list(getattr(msg, name).get_fields_and_field_types())

    basic, advanced = fields("TdmaStatus"), fields("TdmaAdvancedStatus")
    assert advanced[:len(basic)] == basic and "software_mute" in advanced
    for child in ("TdmaScriptedStatus", "TdmaSlottedAlohaStatus"):
        assert fields(child)[:len(advanced)] == advanced, child
    aloha = fields("TdmaSlottedAlohaStatus")[len(advanced):]
    assert aloha[:4] == ["aloha_slots", "aloha_slot_priority", "time_to_next_aloha",
                         "time_to_next_own_slot"]
    for name in ("TdmaAdvancedStatus", "TdmaScriptedStatus", "TdmaSlottedAlohaStatus"):
        nested = [t for f, t in getattr(msg, name).get_fields_and_field_types().items()
                  if "/" in t and f != "header"]
        assert nested == [], (name, nested)
