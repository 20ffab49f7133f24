"""Journey: relaying through a gateway (docs/guide/relaying.md, issue 32).

`acomms_run acomms_bringup/config/relay_line.yaml` (shortened with --duration/--warp max/
--no-mcap): the topside's commands reach the AUV, 10 km away and out of direct range, through
the gateway: every command sent in time is delivered, the direct link decodes nothing, the AUV
publishes none twice, and the topside does not publish its own commands relayed back. A `relay:`
section with a bad route stops the scenario check with one line naming the key.
"""

from __future__ import annotations

import yaml
from journey_support import ROOT, documented, run_summary, shell

CONFIG = ROOT / "acomms_bringup" / "config"
RUN = documented("acomms_run acomms_bringup/config/relay_line.yaml")


def test_commands_reach_the_auv_through_the_gateway(tmp_path):
    out = tmp_path / "relay"
    result = shell(f"{RUN} --duration 250 --warp max --no-mcap --out {out}", timeout_s=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = run_summary(out)
    (row,) = [t for t in summary["topics"] if t["topic"] == "to_acomms/command"]
    assert (row["source"], row["destination"]) == ("topside", "auv")
    # commands at 5, 65, 125, 185, 245 s: the last one is still in the topside's queue
    assert row["sent"] == 5 and row["delivered"] >= 4, row
    assert row["mean_latency_s"] is not None and row["mean_latency_s"] < 60.0, row
    links = {(link["source"], link["receiver"]): link for link in summary["links"]}
    direct = links[("topside", "auv")]
    assert direct["sent"] >= 4 and direct["received"] == 0, direct     # out of range
    assert links[("gateway", "auv")]["received"] >= 4, links          # the relayed copies
    assert summary["duplicates"] == {}, summary["duplicates"]
    assert "to_acomms/command at topside" not in summary["overheard"], summary["overheard"]
    assert "Traceback" not in result.stdout + result.stderr


def test_a_bad_relay_route_stops_the_check(tmp_path):
    data = yaml.safe_load((CONFIG / "relay_line.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / vehicle["codec_config"])
    data["vehicles"][1]["relay"]["routes"] = {1: 300}
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(data))
    result = shell("acomms_check_scenario my.yaml", timeout_s=60, cwd=tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert lines == ["my.yaml: vehicles[1].relay.routes: route 1:300: addresses are 0..255"], lines
