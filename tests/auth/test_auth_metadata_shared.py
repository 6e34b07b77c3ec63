"""What the client and the resource server share (mcpbind.auth._metadata):
the document a ResourceServer publishes is the one the client decodes, and
the client's first well-known URL for a server is where that server serves
its metadata."""

from __future__ import annotations

import msgspec
import pytest

from mcpbind.auth import _metadata as metadata
from mcpbind.auth.client import ProtectedResourceMetadata as ClientDocument
from mcpbind.auth.client._discovery import protected_resource_metadata_urls
from mcpbind.auth.server import JWTVerifier, ResourceServer
from mcpbind.auth.server._metadata import ProtectedResourceMetadata as ServerDocument
from mcpbind.auth.server._metadata import metadata_paths, metadata_url


def test_one_document_type_on_both_sides() -> None:
    assert ClientDocument is ServerDocument is metadata.ProtectedResourceMetadata
    resource = "https://mcp.example.com/mcp"
    server = ResourceServer(
        resource,
        ["https://as.example.com"],
        JWTVerifier("https://as.example.com", resource),
        required_scopes=["a"],
    )
    body = server.metadata_answer("GET").body
    published = msgspec.json.decode(body)
    # What is not set is not published; tokens go in the header only.
    assert published == {
        "resource": resource,
        "authorization_servers": ["https://as.example.com"],
        "scopes_supported": ["a"],
        "bearer_methods_supported": ["header"],
    }
    assert msgspec.json.decode(body, type=ClientDocument) == server.metadata


@pytest.mark.parametrize(
    "resource",
    ["https://mcp.example.com/mcp", "https://mcp.example.com/a/b", "http://127.0.0.1:8000"],
)
def test_the_client_looks_where_the_server_serves(resource: str) -> None:
    first = protected_resource_metadata_urls(resource)[0]
    assert first == metadata_url(resource)
    paths = metadata_paths(resource)
    assert {
        "/" + url.split("://", 1)[1].split("/", 1)[1]
        for url in protected_resource_metadata_urls(resource)
    } == paths


def test_well_known_urls() -> None:
    assert (
        metadata.well_known_url("https://h.example/mcp?x=1", metadata.PRM_WELL_KNOWN)
        == "https://h.example/.well-known/oauth-protected-resource/mcp"
    )
    assert metadata.well_known_url(
        "https://h.example/mcp?x=1", metadata.PRM_WELL_KNOWN, query="x=1"
    ).endswith("/mcp?x=1")
    assert metadata.authorization_server_metadata_urls("https://as.example/t") == [
        "https://as.example/.well-known/oauth-authorization-server/t",
        "https://as.example/.well-known/openid-configuration/t",
        "https://as.example/t/.well-known/openid-configuration",
    ]
