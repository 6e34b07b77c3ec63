"""The application layer serves each revision through that revision's generated
``AnsweringHandlers``: no handler class is built at run time, and what the app
holds decides which methods are routed and which capabilities are declared."""

from __future__ import annotations

from mcpbind._core import lifecycle
from mcpbind.app import App


def _app() -> App:
    app = App("handlers", "1")

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app


def test_each_revision_is_served_by_its_generated_answering_handlers() -> None:
    app = _app()
    handlers = app.handlers()
    assert len(handlers) == len(app.versions)
    for version, served in zip(app.versions, handlers):
        package = lifecycle.revision(version).package
        assert type(served) is package.AnsweringHandlers
        assert lifecycle.revision_of_handlers(served, "ServerHandlers").version == version


def test_only_what_the_app_holds_is_routed_and_declared() -> None:
    """A server declares the capabilities of what it serves: an app with tools
    and nothing else declares ``tools``, not ``prompts``, ``resources`` or
    ``completions``, and routes no method of theirs."""
    app = _app()
    for served in app.handlers():
        revision = lifecycle.revision_of_handlers(served, "ServerHandlers")
        declared = lifecycle.capabilities(served, "ServerHandlers", revision, "CLIENT_REQUESTS")
        assert set(declared) == {"tools"}
        assert lifecycle.overridden(served, "ServerHandlers", "call_tool")
        assert not lifecycle.overridden(served, "ServerHandlers", "get_prompt")
        assert not lifecycle.overridden(served, "ServerHandlers", "read_resource")
