"""Packet codecs by name (`packet_codec: <name>` in the codec YAML); the one registry.

Built-in codecs are the entries of `BUILT_IN` below (a new one is one line there). A custom codec
is a Python module that calls `register_packet_codec(name, factory)` at import; it is loaded from
`custom_packet_codec_paths` (the message_queue_node / packet_dispatch_node parameter, as in
ros_acomms, or the same key in a packet codec entry of the codec YAML). Each source is one of:

- a `.py` file (relative paths: to the codec YAML's directory for the YAML key, to the working
  directory for the node parameter);
- a directory: every `*_packet_codec.py` file directly in it (ros_acomms' naming convention);
- a Python module name (`my_pkg.my_packet_codec`), imported from the Python path (when no file
  or directory of that name exists).

A factory is called as `factory(miniframe_header=bytes, dataframe_header=bytes, **options)` and
returns a `PacketCodec`; `options` are the extra codec YAML keys the codec registered.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable

from acomms_core.codecs.ros_packet_codec import RosPacketCodec

PacketCodecFactory = Callable[..., object]


class PacketCodecError(ValueError):
    """A packet codec that cannot be registered or loaded; the message says why."""


@dataclasses.dataclass(frozen=True)
class PacketCodecEntry:
    name: str
    factory: PacketCodecFactory
    options: tuple[str, ...] = ()   # extra codec YAML keys passed to the factory
    origin: str = ""                # module that registered it


BUILT_IN: tuple[PacketCodecEntry, ...] = (
    PacketCodecEntry("ros", RosPacketCodec, origin=__name__),
)

PACKET_CODECS: dict[str, PacketCodecEntry] = {entry.name: entry for entry in BUILT_IN}
_lock = threading.RLock()
_loaded_files: dict[str, object] = {}   # absolute path -> module (a file is executed once)
_registered: dict[str, set[str]] = {}   # registering module -> the names it registered
_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def register_packet_codec(name: str, factory: PacketCodecFactory, options: Iterable[str] = (),
                          origin: str | None = None) -> PacketCodecEntry:
    """Make `packet_codec: name` build codecs with factory.

    origin (default: the calling module) is what the loader checks a loaded module registered.
    Registering the same factory again (or the same class from the same file, e.g. a module
    imported twice under two names) replaces the entry; another factory under a taken name is
    refused.
    """
    if not isinstance(name, str) or not name.strip():
        raise PacketCodecError(f"a packet codec name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise PacketCodecError(f"packet codec '{name}': factory {factory!r} is not callable")
    if origin is None:
        caller = inspect.currentframe().f_back
        origin = caller.f_globals.get("__name__", "") if caller is not None else ""
    entry = PacketCodecEntry(name, factory, tuple(options), origin)
    with _lock:
        existing = PACKET_CODECS.get(name)
        if existing is not None and not _same_factory(existing.factory, factory):
            raise PacketCodecError(f"packet codec '{name}' is already registered (by "
                                   f"{existing.origin or 'another module'})")
        PACKET_CODECS[name] = entry
        _registered.setdefault(origin, set()).add(name)
    return entry


def _same_factory(a, b) -> bool:
    if a is b:
        return True

    def where(factory):
        try:
            return getattr(factory, "__qualname__", None), inspect.getsourcefile(factory)
        except TypeError:
            return None, id(factory)

    return where(a) == where(b)


def packet_codec_entry(name: str) -> PacketCodecEntry:
    """The registered entry; PacketCodecError naming the known ones."""
    entry = PACKET_CODECS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise PacketCodecError(f"unknown packet_codec {name!r} (registered: "
                               f"{', '.join(sorted(PACKET_CODECS))}; a custom codec loads from "
                               "custom_packet_codec_paths)")
    return entry


def source_list(value) -> list[str]:
    """custom_packet_codec_paths as given (None, '', one string or a list) -> list of sources."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return [v for v in value if v]
    raise PacketCodecError("custom_packet_codec_paths must be a string or a list of strings, "
                           f"got {value!r}")


def load_packet_codecs(sources, base_directory: str | None = None) -> list[str]:
    """Load every source (file, directory or module name); the codec names they registered."""
    names: list[str] = []
    for source in source_list(sources):
        names += load_packet_codec_source(source, base_directory)
    return names


def load_packet_codec_source(source: str, base_directory: str | None = None) -> list[str]:
    """Load one source; PacketCodecError naming it when it cannot be loaded or registers none."""
    path = os.path.normpath(os.path.join(base_directory or os.getcwd(),
                                         os.path.expanduser(source)))
    if not os.path.exists(path) and _MODULE_NAME.match(source) and not source.endswith(".py"):
        return _registered_by(_import_module(source), source)
    if os.path.isdir(path):
        files = sorted(f for f in os.listdir(path) if f.endswith("_packet_codec.py"))
        if not files:
            raise PacketCodecError(f"'{source}': no *_packet_codec.py file in directory {path}")
        return [name for f in files for name in _load_file(os.path.join(path, f), source)]
    if not os.path.isfile(path):
        raise PacketCodecError(f"'{source}': no such file or directory ({path})")
    return _load_file(path, source)


def _load_file(path: str, source: str) -> list[str]:
    with _lock:
        module = _loaded_files.get(path)
        if module is None:
            digest = hashlib.sha1(path.encode()).hexdigest()[:10]
            stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
            module_name = f"acomms_custom_packet_codecs.{stem}_{digest}"
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                raise PacketCodecError(f"'{source}': {path} is not a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[module_name]
                raise PacketCodecError(f"'{source}': importing {path} failed: "
                                       f"{type(exc).__name__}: {exc}") from None
            _loaded_files[path] = module
    return _registered_by(module, source)


def _import_module(source: str):
    try:
        return importlib.import_module(source)
    except Exception as exc:
        raise PacketCodecError(f"'{source}': cannot import module: "
                               f"{type(exc).__name__}: {exc}") from None


def _registered_by(module, source: str) -> list[str]:
    names = sorted(_registered.get(module.__name__, ()))
    if not names:
        raise PacketCodecError(f"'{source}': module {module.__name__} registers no packet codec "
                               "(it must call register_packet_codec(name, factory) at import)")
    return names
