"""Test helper: collects a MicromodemModel's output sentences and waits for one by type; two
emulated modems on a loopback channel."""

import queue
import time

from acomms_driver.micromodem import nmea
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel


def emulator_pair(delay_s: float):
    """Generator for a fixture: (a, Capture(a), b, Capture(b)), closed afterwards."""
    backend = LoopbackBackend(delay_s=delay_s)
    a = MicromodemModel(1, backend, airtime_scale=0.02)
    b = MicromodemModel(2, backend, airtime_scale=0.02)
    yield a, Capture(a), b, Capture(b)
    a.close()
    b.close()
    backend.close()


class Capture:
    def __init__(self, model):
        self.sentences = queue.Queue()
        model.output = lambda line: self.sentences.put(nmea.parse_line(line))

    def wait_for(self, sentence_type, timeout=3.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                sentence = self.sentences.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                break
            if sentence.type == sentence_type:
                return sentence
        raise AssertionError(f"no {sentence_type} within {timeout} s")

    def types(self):
        """Types of everything received so far (drains the queue)."""
        found = []
        while not self.sentences.empty():
            found.append(self.sentences.get().type)
        return found
