"""Lenient on receive where peers are ahead: a union arm this revision does
not know (a ``resource_link`` block, new in 2025-06-18, from a server that
answered 2024-11-05) decodes into an UnknownValue that keeps its JSON and
encodes back unchanged, while what we send stays strict."""

from __future__ import annotations

import msgspec
import pytest
from support.peers import (
    everything_server,
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)

from mcpbind._client.client import Client, connect_stdio
from mcpbind.codec import UnknownValue, decode, decode_lenient, encode
from mcpbind_protocol import v2024_11_05 as old

LINK = b'{"type":"resource_link","uri":"demo://resource/1","name":"one"}'


def test_unknown_content_block_keeps_its_json() -> None:
    raw = (
        b'{"content":[{"type":"text","text":"a"},'
        + LINK
        + b',{"type":"text","text":"b"},{"type":"hologram"}],"isError":false}'
    )
    with pytest.raises(msgspec.ValidationError, match="resource_link"):
        decode(raw, old.CallToolResult)  # the strict decode is unchanged
    result = decode_lenient(raw, old.CallToolResult)
    first, link, last, hologram = result.content
    assert isinstance(first, old.TextContent) and isinstance(last, old.TextContent)
    assert (
        isinstance(link, UnknownValue)
        and link.tag == "resource_link"
        and link["uri"] == "demo://resource/1"
    )
    assert isinstance(hologram, UnknownValue) and hologram.tag == "hologram"
    assert encode(result) == raw


def test_unknown_arm_in_a_single_field_keeps_the_list_item_around_it() -> None:
    # The known message encodes its fields in declaration order; the unknown one as it came.
    raw = (
        b'{"messages":[{"content":{"type":"text","text":"hi"},"role":"user"},{"role":"user","content":'
        + LINK
        + b"}]}"
    )
    result = decode_lenient(raw, old.GetPromptResult)
    assert isinstance(result.messages[0], old.PromptMessage)
    assert (
        isinstance(result.messages[1], UnknownValue)
        and result.messages[1]["content"]["type"] == "resource_link"
    )
    assert encode(result) == raw


def test_other_errors_stay_errors() -> None:
    with pytest.raises(msgspec.ValidationError, match="Expected `str`"):
        decode_lenient(b'{"content":[' + LINK + b',{"type":"text","text":1}]}', old.CallToolResult)
    with pytest.raises(msgspec.ValidationError, match="hologram"):  # not inside any list
        decode_lenient(b'{"role":"user","content":{"type":"hologram"}}', old.PromptMessage)


def test_what_we_send_stays_strict() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(
            {"type": "resource_link", "uri": "u", "name": "n"}, old.TextContent | old.ImageContent
        )


@pytest.mark.node
@pytest.mark.usefixtures("no_leaked_processes")
def test_server_everything_at_2024_11_05_sending_resource_links() -> None:
    async def scenario() -> None:
        client = Client(name="lenient", version="0", protocol_version="2024-11-05")
        async with connect_stdio(client, everything_server()) as session:
            assert session.protocol_version == "2024-11-05"
            result = await old.ClientStub(session).call_tool(
                "get-resource-links", arguments={"count": 2}
            )
            assert isinstance(result.content[0], old.TextContent)
            links = [block for block in result.content if isinstance(block, UnknownValue)]
            assert [link.tag for link in links] == ["resource_link", "resource_link"]
            assert links[0]["uri"].startswith("demo://resource/")

    run(scenario())
