"""Key expiry (`accept_until`, a time of day) is checked on the clock the node binds its codecs
with (the node's ROS clock: simulated time in a simulated run), not on the wall clock: a run at
a simulated date before accept_until accepts the old key whenever the run happens."""

import pytest
from security_support import (
    KEY_1,
    KEY_2,
    open_packet,
    seal,
    secured_codec,
    secured_entry,
    write_key_file,
)
from std_msgs.msg import UInt8

from acomms_core.codecs import parse_codec_config
from acomms_core.security import SecurityConfigError, bind_receivers, bind_senders

SIM_START = 1_735_689_600.0  # 2025-01-01T00:00:00Z, acomms_run's default simulated start
UNTIL = SIM_START + 3600.0  # the old key's accept_until: simulated hour one


def test_the_old_key_is_accepted_until_accept_until_on_the_bound_clock(tmp_path):
    old = write_key_file(tmp_path / "old.keys", [(1, KEY_1, None)])
    sender, _ = secured_codec(old, src=1, state_dir=tmp_path)
    sealed = seal(sender, [(6, UInt8(data=1))])
    ring = write_key_file(tmp_path / "ring.keys", [(1, KEY_1, UNTIL), (2, KEY_2, None)])
    outcomes = []
    for now in (SIM_START, UNTIL + 1.0):  # both long before today's wall clock
        config = parse_codec_config([secured_entry(ring)], "cfg.yaml")
        assert bind_receivers(config, "/v/dispatch", str(tmp_path / now.hex()),
                              clock=lambda now=now: now) == 1
        outcomes.append(open_packet(config.packet_codecs[0], *sealed, 1)[1])
    assert outcomes == ["packets_authenticated", "auth_key_expired"]


def test_a_sender_bound_on_a_clock_past_its_key_is_refused_before_any_packet(tmp_path):
    ring = write_key_file(tmp_path / "ring.keys", [(1, KEY_1, UNTIL)], send_key=1)
    config = parse_codec_config([secured_entry(ring)], "cfg.yaml")
    assert bind_senders(config, 1, str(tmp_path), clock=lambda: SIM_START,
                        fresh_key_ids=[1]) == 1
    late = parse_codec_config([secured_entry(ring)], "cfg.yaml")
    with pytest.raises(SecurityConfigError, match="past its accept_until"):
        bind_senders(late, 1, str(tmp_path), clock=lambda: UNTIL + 1.0)
