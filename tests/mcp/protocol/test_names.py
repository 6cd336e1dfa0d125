import pytest

from nr_llm.mcp.protocol.names import InvalidToolName, checked_local_name, local_name


def test_local_name_joins_prefix_identifier_and_remote_name():
    """The local name is mcp_<identifier>_<remote>, so two servers' tools never share one."""
    assert local_name("demo", "echo") == "mcp_demo_echo"
    assert checked_local_name("demo", "get-weather_2") == "mcp_demo_get-weather_2"


def test_a_local_name_of_exactly_64_characters_is_accepted():
    """64 characters is the limit function-calling APIs accept, and it is inclusive."""
    remote = "x" * (64 - len("mcp_demo_"))
    assert len(checked_local_name("demo", remote)) == 64


def test_a_local_name_over_64_characters_is_rejected_not_shortened():
    """One character too many is refused with the length in the reason."""
    remote = "x" * (65 - len("mcp_demo_"))
    with pytest.raises(InvalidToolName, match="would be 65 characters; at most 64"):
        checked_local_name("demo", remote)


@pytest.mark.parametrize("remote", ["get weather", "tool.v2", "wetter_für_morgen", "a/b", "tool\n", "ｅcho"])
def test_a_remote_name_with_characters_outside_the_rule_is_rejected(remote):
    """Spaces, dots, non-ASCII letters and a trailing newline are refused, never rewritten."""
    with pytest.raises(InvalidToolName, match="never rewritten"):
        checked_local_name("demo", remote)


def test_an_empty_remote_name_is_rejected_with_its_own_reason():
    """An empty remote name would make the local name a bare prefix; the reason says it is empty."""
    with pytest.raises(InvalidToolName, match="remote tool name is empty"):
        checked_local_name("demo", "")


def test_the_reason_shows_remote_text_without_control_characters():
    """A hostile name cannot forge a new line in the operator's report."""
    with pytest.raises(InvalidToolName) as info:
        checked_local_name("demo", "evil\nFAKE: all good\x1b[2J")
    assert "\n" not in str(info.value)
    assert "\x1b" not in str(info.value)
    assert "evil FAKE: all good[2J" in str(info.value)
