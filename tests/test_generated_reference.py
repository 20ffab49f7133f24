"""docs/reference/ is generated from the code (issue 27): the checked-in pages must be what
scripts/generate_reference.py writes now, and what they list must agree with other sources."""

import difflib
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "generate_reference.py"
FIX = "run `python scripts/generate_reference.py`"


def _load_script():
    spec = importlib.util.spec_from_file_location("generate_reference_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return _load_script()


@pytest.fixture(scope="module")
def pages(script):
    return script.generate()


def test_checked_in_pages_are_what_the_code_generates(script, pages):
    stale = script.stale_pages(pages)
    assert not stale, (f"docs/reference/ out of date ({', '.join(stale)}): {FIX}\n"
                       + _diff(script.OUT_DIR / stale[0], pages[stale[0]]))
    extra = sorted(p.name for p in script.OUT_DIR.glob("*.md") if p.name not in pages)
    assert not extra, f"docs/reference/ has pages the script does not write ({extra}): {FIX}"


def _diff(path: pathlib.Path, text: str, lines: int = 40) -> str:
    old = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    diff = difflib.unified_diff(old, text.splitlines(), "checked in", "generated", lineterm="")
    return "\n".join(list(diff)[:lines])


def test_a_changed_or_missing_page_is_reported(script, pages, tmp_path):
    for name, text in pages.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert script.stale_pages(pages, tmp_path) == []
    first, second = sorted(pages)[:2]
    (tmp_path / first).write_text(pages[first] + "hand edit\n", encoding="utf-8")
    (tmp_path / second).unlink()
    assert script.stale_pages(pages, tmp_path) == [first, second]


def test_output_is_stable_and_has_no_absolute_paths(script, pages):
    import tempfile

    assert script.generate() == pages  # no timestamps, no order of the moment
    for name, text in pages.items():
        assert str(ROOT) not in text, name
        assert tempfile.gettempdir() + "/" not in text, name


def _node_sections(text: str) -> dict[str, str]:
    parts = re.split(r"^### `(\w+)`$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_nodes_page_has_every_node_other_tables_name(pages):
    """MAC kinds, bridges and the scenario's node tables name executables independently."""
    from acomms_bringup.bridges.registry import BRIDGES
    from acomms_bringup.description.scenario import MODEM_EXECUTABLES, NODE_PARAMETER_TABLES
    from acomms_core.mac.registry import MAC_KINDS

    sections = _node_sections(pages["nodes.md"])
    named = {kind.executable for kind in MAC_KINDS.values()} | set(BRIDGES)
    named |= set(NODE_PARAMETER_TABLES) | set(MODEM_EXECUTABLES.values())
    assert named - set(sections) == set()
    for executable, location in NODE_PARAMETER_TABLES.items():
        from acomms_bringup.description.scenario import executable_parameter_specs

        for name in executable_parameter_specs(executable):
            assert f"| `{name}` |" in sections[executable], (executable, name, location)


def test_nodes_page_lists_topics_and_services(pages):
    sections = _node_sections(pages["nodes.md"])
    queue = sections["message_queue_node"]
    assert "| serves | `get_next_packet_data` | `acomms_interfaces/srv/GetNextPacketData` |" \
        in queue
    assert "| publishes | `queue_status` |" in queue
    assert "| subscribes | `packet_rx` |" in sections["packet_dispatch_node"]
    assert "`~/change_state`" not in queue  # standard interfaces are listed once, at the top


def test_scenario_page_lists_the_keys_the_loader_allows(pages):
    """The loader's own "allowed here" list for an unknown key, against the page's table."""
    from acomms_bringup.description.scenario import ScenarioError, parse_scenario

    channel = {"noise": {"model": "wenz", "bogus": 1}}
    with pytest.raises(ScenarioError) as refused:
        parse_scenario({"duration_seconds": 1, "channel": channel, "vehicles": [{}]})
    allowed = re.search(r"allowed here: \[(.*)\]", str(refused.value)).group(1)
    section = pages["scenario.md"].split("## `channel.noise`")[1].split("## ")[0]
    for key in re.findall(r"'(\w+)'", allowed):
        assert f"| `{key}` |" in section, key


def test_the_loader_reads_keys_only_through_the_tables():
    source = (ROOT / "acomms_bringup/acomms_bringup/description/scenario.py").read_text()
    direct = re.findall(r'\.get\("\w+", \(', source)
    assert direct == [], "read scenario keys with _Section.take (scenario_keys tables)"


def test_registries_page_has_every_registry_entry(pages):
    from acomms_bringup.bridges.registry import BRIDGES
    from acomms_core.codecs.registry import BUILT_IN
    from acomms_core.mac.registry import MAC_KINDS
    from acomms_core.modems.registry import MODEM_PROFILES

    text = pages["registries.md"]
    for name in [*MAC_KINDS, *BRIDGES, *(e.name for e in BUILT_IN)]:
        assert f"| `{name}` |" in text, name
    for name in MODEM_PROFILES:
        assert f"### `{name}`" in text, name


def test_readme_and_architecture_link_the_reference():
    assert "docs/reference/" in (ROOT / "README.md").read_text()
    assert "(reference/)" in (ROOT / "docs/ARCHITECTURE.md").read_text()


def _all_keys(keys):
    for key in keys:
        yield key
        yield from _all_keys(key.keys or ())


def test_every_key_of_the_tables_is_read_by_the_loader():
    """The other direction: a key in the tables (so on the page) the loader never reads would
    be refused as unknown; each must appear in a take/raw/section/items call."""
    from acomms_bringup.description.scenario_keys import SCENARIO_KEYS

    source = "\n".join(path.read_text() for path in sorted(  # the loader and its section modules
        (ROOT / "acomms_bringup/acomms_bringup/description").glob("scenario*.py")))
    read = set(re.findall(r'\.(?:take|raw|section|items)\("(\w+)"', source))
    unread = sorted({key.name for key in _all_keys(SCENARIO_KEYS)} - read)
    assert unread == []
