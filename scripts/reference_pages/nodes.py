"""docs/reference/nodes.md: every lifecycle node executable, its parameters, topics, services.

Sources of truth, all in the code:
- the executables: the console_scripts of each package's setup.py; a lifecycle node is one
  whose `main` runs `run_node(NodeClass, ...)` (the others are listed as command-line tools);
- the parameters: the `ParameterSpec`s the node declares (`declared_parameter_specs`), plus any
  parameter the node declares otherwise (listed from its descriptor);
- the topics and services: the node itself, built in-process with a private rclpy Context,
  configured and activated (its publishers, subscriptions, services and clients; no graph
  discovery, so no timing dependence). A node that refuses to configure or activate without a
  modem, a server or a file lists what it has at that point, and says so.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pathlib
import re
import tempfile

from reference_pages.markdown import code, table, value_range

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("acomms_core", "acomms_driver", "acomms_sim", "acomms_bringup", "acomms_interfaces")
_ENTRY = re.compile(r'"(\w+)\s*=\s*([\w.]+):(\w+)"')


class RepoFile(str):
    """A parameter value naming a file of this repository (given to the node as its path)."""


class TempFile(str):
    """A parameter value naming a file the node may write (given as a path in a temporary
    directory, so that introspection writes nothing into the working directory)."""


# Parameters a node needs to be built and brought up for introspection (the page says which
# were given). Kept to the minimum: files it reads at configure, names it must have.
_DEMO_CODECS = RepoFile("acomms_bringup/config/demo_codecs.yaml")
INTROSPECTION_OVERRIDES = {
    "message_queue_node": {"codec_config_file": _DEMO_CODECS},
    "packet_dispatch_node": {"codec_config_file": _DEMO_CODECS},
    "lifecycle_manager": {"node_names": ["managed_node"], "autostart": False},
    "acomms_recorder": {"output_path": TempFile("recording.mcap")},
    "trajectory_node": {"waypoint_times_seconds": [0.0], "waypoint_latitudes": [41.5],
                        "waypoint_longitudes": [-70.6], "waypoint_depths": [10.0]},
    "netsim_manager_node": {"config_file": RepoFile("acomms_sim/config/netsim_manager.yaml")},
    "acomms_driver_node": {"modem_log_dir": TempFile("modem_logs")},
}
# Nodes whose subscriptions are whatever the ROS graph holds when they look: listed as this
# sentence instead (the graph of the moment is not a property of the code).
GRAPH_SUBSCRIBERS = {
    "acomms_recorder": "every topic of the graph but `exclude_topics` (rescanned every "
                       "`rescan_period_s`)",
}
NAMESPACE = "/ns"  # nodes are built here: names under it are relative, others absolute
# Interfaces every rclpy (lifecycle) node has; listed once at the top, not per node.
STANDARD_SERVICES = ("change_state", "describe_parameters", "get_available_states",
                     "get_available_transitions", "get_parameter_types", "get_parameters",
                     "get_state", "get_transition_graph", "get_type_description",
                     "list_parameters", "set_parameters", "set_parameters_atomically")
STANDARD_TOPICS = ("/rosout", "/parameter_events")
STANDARD_NODE_TOPICS = ("transition_event",)
ROS_PARAMETERS = ("use_sim_time", "start_type_description_service")


def console_scripts() -> list[tuple[str, str, str, str]]:
    """[(package, executable, module, function)] from every package's setup.py, sorted."""
    scripts = []
    for package in PACKAGES:
        setup = ROOT / package / "setup.py"
        if setup.is_file():
            scripts += [(package, *match) for match in _ENTRY.findall(setup.read_text())]
    return sorted(scripts)


def node_class(module_name: str, function: str):
    """The class `function` hands to run_node, or None (a command-line tool)."""
    module = importlib.import_module(module_name)
    tree = ast.parse(inspect.getsource(getattr(module, function)))
    for call in ast.walk(tree):
        if (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "run_node"
                and call.args and isinstance(call.args[0], ast.Name)):
            return getattr(module, call.args[0].id)
    return None


def _entity_rows(node):
    """(kind, name, type) of the node's own publishers, subscriptions, services, clients."""
    standard = {f"~/{name}" for name in STANDARD_SERVICES + STANDARD_NODE_TOPICS}
    standard |= set(STANDARD_TOPICS)

    def type_name(cls):
        module = cls.__module__.split(".")
        return f"{module[0]}/{module[1]}/{cls.__name__}"

    topic, service = node.resolve_topic_name, node.resolve_service_name
    rows = [("publishes", topic(p.topic_name), type_name(p.msg_type)) for p in node.publishers]
    rows += [("subscribes", topic(s.topic_name), type_name(s.msg_type))
             for s in node.subscriptions]
    rows += [("serves", service(s.srv_name), type_name(s.srv_type)) for s in node.services]
    rows += [("calls", service(c.srv_name), type_name(c.srv_type)) for c in node.clients]
    rows = [(kind, _as_written(node, name), kind_type) for kind, name, kind_type in rows]
    rows = [row for row in rows if row[1] not in standard]
    return sorted(set(rows), key=lambda row: (row[1], row[0], row[2]))


def _as_written(node, name: str) -> str:
    """A resolved name as the node's code wrote it: `~/x` (private), `x` (relative: in the
    node's namespace) or `/x` (absolute)."""
    private = f"{NAMESPACE}/{node.get_name()}/"
    if name.startswith(private):
        return "~/" + name[len(private):]
    if name.startswith(NAMESPACE + "/"):
        return name[len(NAMESPACE) + 1:]
    return name


def _bring_up(node) -> str:
    """Configure then activate; '' when active, else how far it got."""
    from rclpy.lifecycle import TransitionCallbackReturn

    if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
        return "does not configure without a site-specific set-up: listed as constructed"
    if node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
        return "does not activate without its hardware or peer: listed as configured"
    return ""


def _override_value(value, scratch: str):
    if isinstance(value, RepoFile):
        return str(ROOT / value)
    if isinstance(value, TempFile):
        return os.path.join(scratch, value)
    return value


def introspect(executable: str, cls, context, scratch: str) -> dict:
    """What a node of `cls` declares and creates, brought up in `context`."""
    from rclpy.lifecycle import LifecycleNode
    from rclpy.parameter import Parameter

    from acomms_core.ros.ros_support import declared_parameter_specs

    overrides = INTROSPECTION_OVERRIDES.get(executable, {})
    try:
        node = cls(context=context, namespace=NAMESPACE, parameter_overrides=[
            Parameter(name, value=_override_value(value, scratch))
            for name, value in overrides.items()])
    except Exception as exc:
        raise SystemExit(f"{executable}: cannot be built for introspection ({exc}); give it "
                         "what it needs in INTROSPECTION_OVERRIDES of "
                         "scripts/reference_pages/nodes.py") from None
    try:
        lifecycle = isinstance(node, LifecycleNode)
        note = _bring_up(node) if lifecycle else "not a lifecycle node"
        specs = declared_parameter_specs(node)
        known = {spec.name for spec in specs} | set(ROS_PARAMETERS)
        other = sorted(name for name in node.get_parameters_by_prefix("") if name not in known)
        extra = [(name, node.describe_parameter(name), node.get_parameter(name))
                 for name in other]
        entities = _entity_rows(node)
        if executable in GRAPH_SUBSCRIBERS:
            entities = [row for row in entities if row[0] != "subscribes"]
        return {"specs": specs, "extra": extra, "entities": entities, "note": note,
                "name": node.get_name(), "overrides": sorted(overrides.items()),
                "graph": GRAPH_SUBSCRIBERS.get(executable, ""),
                "class": cls}
    finally:
        node.destroy_node()


def _override_text(value) -> str:
    if isinstance(value, TempFile):
        return f"<temporary directory>/{value}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parameter_rows(info: dict):
    rows = [(f"`{spec.name}`", spec.type_name, code(spec.default),
             value_range(spec.minimum, spec.maximum),
             spec.description + (" (read-only)" if spec.read_only else ""))
            for spec in info["specs"]]
    rows += [(f"`{name}`", parameter.type_.name.lower(), code(parameter.value), "",
              (descriptor.description or "") + " (declared outside a ParameterSpec table)")
             for name, descriptor, parameter in info["extra"]]
    return rows


def _node_section(executable: str, info: dict) -> str:
    cls = info["class"]
    lines = [f"### `{executable}`\n",
             f"Class `{cls.__module__}.{cls.__name__}`, default node name `{info['name']}`.\n"]
    doc = inspect.getdoc(cls)
    if doc:
        lines.append(doc.split("\n\n")[0].replace("\n", " ") + "\n")
    if info["overrides"]:
        lines.append("Introspected with " + ", ".join(
            f"`{name}: {_override_text(value)}`" for name, value in info["overrides"])
                     + " (what it needs to start, or where it may write).\n")
    if info["note"]:
        lines.append(f"Note: {info['note']}.\n")
    lines.append("Parameters:\n")
    rows = _parameter_rows(info)
    lines.append(table(("name", "type", "default", "range", "description"), rows)
                 if rows else "(none of its own)\n")
    lines.append("Topics and services (`name`: in the node's namespace, `/name`: absolute, "
                 "`~/name`: under the node's name):\n")
    entities = [(kind, f"`{name}`", f"`{kind_type}`") for kind, name, kind_type
                in info["entities"]]
    if info["graph"]:
        entities.append(("subscribes", info["graph"], ""))
    lines.append(table(("", "name", "type"), entities) if entities else "(none)\n")
    return "\n".join(lines)


def nodes_page() -> str:
    import rclpy
    from rclpy.context import Context
    from rclpy.logging import LoggingSeverity, set_logger_level

    context = Context()
    rclpy.init(context=context)
    # Quiet only the nodes built here (loggers under the namespace): `--log-level` in init args
    # would set the process-wide default, silencing every later node of the process (a test run).
    quiet = NAMESPACE.strip("/")
    set_logger_level(quiet, LoggingSeverity.FATAL)
    sections, tools = [], []
    scratch = tempfile.TemporaryDirectory(prefix="acomms-reference-")
    try:
        for package, executable, module, function in console_scripts():
            cls = node_class(module, function)
            if cls is None:
                tools.append((f"`{executable}`", f"`{package}`", f"`{module}:{function}`"))
                continue
            if f"## `{package}`\n" not in sections:
                sections.append(f"## `{package}`\n")
            info = introspect(executable, cls, context, scratch.name)
            sections.append(_node_section(executable, info))
    finally:
        rclpy.shutdown(context=context)
        set_logger_level(quiet, LoggingSeverity.UNSET)
        scratch.cleanup()
    intro = [
        "# Nodes reference\n",
        "Every node executable of the packages (lifecycle nodes unless noted), by package, "
        "generated from the code: the parameters "
        "from the `ParameterSpec` tables each node declares (acomms_core.ros.parameter_spec), "
        "the topics and services from the node itself, configured and activated in-process "
        "with default parameters (those a node needs to start are named under it). Every "
        "node also has rclpy's parameters "
        + ", ".join(f"`{name}`" for name in ROS_PARAMETERS) + ", the lifecycle and parameter "
        "services (" + ", ".join(f"`~/{name}`" for name in STANDARD_SERVICES) + "), and "
        "publishes " + ", ".join(f"`{name}`" for name in STANDARD_TOPICS) + " and "
        "`~/transition_event`; they are not repeated below. Topics a node creates only when "
        "a parameter asks for them (codec topics, per-slot or per-MAC names) appear with the "
        "default parameters' names only.\n",
    ]
    tool_section = ["## Command-line tools (not nodes)\n",
                    table(("executable", "package", "entry point"), tools)]
    return "\n".join(intro + sections + tool_section)
