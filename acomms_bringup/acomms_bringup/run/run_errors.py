"""The runner's errors, in a module of their own so that the runner's parts (stepped_run,
run_outputs) can raise them without importing the runner."""


class RunError(RuntimeError):
    """The run cannot go on; the message says what and why (printed without a traceback)."""


class RunStopped(RunError):
    """The run stopped after it started (a callback raised, a step or participant timed out);
    what ran until then is still summarised."""
