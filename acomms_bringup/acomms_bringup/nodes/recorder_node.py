"""acomms_recorder: records every topic of a launch setup into an MCAP file (opt-in).

`acomms_run` records its own runs (run.mcap in the run's folder); this lifecycle node does the same
for a stack started with launch files: `ros2 run acomms_bringup acomms_recorder --ros-args -p
output_path:=/tmp/trial.mcap` (or add it to a launch file), then configure and activate it.

- on_configure: checks the parameters (the output file's folder can be created, the file is
  not there yet unless `overwrite`);
- on_activate: opens the file (`acomms_bringup.run.mcap_recording.McapSink`), subscribes to every
  topic of the graph except `exclude_topics` (raw CDR, `TopicRecorder`) and looks for new topics
  every `rescan_period_s` (node clock);
- on_deactivate / cleanup / shutdown: unsubscribes and finishes the file (readable by `ros2 bag
  info`, Foxglove, mcap-ros2-support). Another activation starts a new file only if `overwrite`.
Diagnostics: the `messages_recorded` and `topics_recorded` counts are logged on deactivate.
"""

from __future__ import annotations

import os
import sys

from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from acomms_bringup.run.mcap_recording import EXCLUDED_TOPICS, McapSink, TopicRecorder
from acomms_core.ros.ros_support import (
    ManagedNode,
    ParameterSpec,
    declare_parameters,
    parameter_values,
    run_node,
)

PARAMETERS = (
    ParameterSpec("output_path", "acomms_recording.mcap",
                  "MCAP file to write (its folder is created)."),
    ParameterSpec("overwrite", False, "Replace an existing output file."),
    ParameterSpec("exclude_topics", list(EXCLUDED_TOPICS),
                  "Topics not recorded (fully qualified names).",
                  parameter_type=Parameter.Type.STRING_ARRAY),
    ParameterSpec("rescan_period_s", 1.0, "How often to look for new topics, s (node clock).",
                  minimum=0.05, maximum=3600.0),
)


def check_recorder_values(values: dict) -> str | None:
    """Pure validator: a usable output path."""
    path = values.get("output_path") or ""
    if not path.endswith(".mcap"):
        return f"output_path must end in .mcap, got {path!r}"
    return None


class RecorderNode(ManagedNode):
    """Records every topic into an MCAP file while active (see the module docstring)."""

    def __init__(self, node_name: str = "acomms_recorder", **kwargs):
        super().__init__(node_name, **kwargs)
        declare_parameters(self, PARAMETERS, check_recorder_values)
        self.sink: McapSink | None = None
        self.topics: TopicRecorder | None = None

    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, [spec.name for spec in PARAMETERS])
        path = values["output_path"]
        if os.path.exists(path) and not values["overwrite"]:
            self.get_logger().error(f"configure refused: {path} exists (set overwrite to "
                                    "replace it)")
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, [spec.name for spec in PARAMETERS])
        try:
            self.sink = McapSink(values["output_path"])
        except OSError as exc:
            self.get_logger().error(f"activate refused: cannot write {values['output_path']}: "
                                    f"{exc.strerror}")
            return TransitionCallbackReturn.FAILURE
        self.topics = TopicRecorder(self, self.sink, exclude=values["exclude_topics"])
        self.topics.scan()
        self.activated.timer(values["rescan_period_s"], self.topics.scan)
        return super().on_activate(state)

    def on_release(self) -> None:
        self._close()

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        result = super().on_deactivate(state)
        self._close()
        return result

    def _close(self) -> None:
        if self.topics is not None:
            self.topics.stop()
            self.topics = None
        if self.sink is not None:
            self.sink.close()
            self.get_logger().info(f"recorded {sum(self.sink.counts.values())} messages on "
                                   f"{len(self.sink.counts)} topics into {self.sink.path}")
            self.sink = None


def main(args=None) -> int:
    return run_node(RecorderNode, args)


if __name__ == "__main__":
    sys.exit(main())
