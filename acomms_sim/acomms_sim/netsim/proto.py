"""The Python code generated from netsim.proto, with a clear error when it was not built.

`netsim_pb2` is generated at build time (acomms_sim/setup.py: grpc_tools' protoc); a source
checkout that was never built gets an ImportError naming the fix instead of a bare module error.
"""

try:
    from acomms_sim.netsim import netsim_pb2
except ImportError as exc:  # pragma: no cover - only in an unbuilt checkout
    raise ImportError("acomms_sim.netsim.netsim_pb2 is generated from netsim.proto at build "
                      "time: run scripts/bootstrap.sh (colcon build)") from exc

__all__ = ["netsim_pb2"]
