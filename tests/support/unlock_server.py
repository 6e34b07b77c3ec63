"""The servers guide's visibility example behind a :class:`~mcpbind.app.Cache`:
the ``admin`` tools hidden from every session, ``unlock`` showing them to the
caller's session (``app.enable(..., session=ctx)``), ``retire`` hiding a tool
from everyone while serving (``app.disable([name])``). Run as a script, it
serves over stdio."""

from __future__ import annotations

from mcpbind.app import App, Cache, Context


def unlock_app() -> App:
    app = App("unlocking", middleware=[Cache(ttl=600.0)])

    @app.tool(tags={"admin"})
    def purge() -> int:
        return 0

    app.disable(tags={"admin"})  # hidden from every session

    @app.tool()
    def unlock(code: str, ctx: Context) -> str:
        app.enable(tags={"admin"}, session=ctx)  # shown to this session only
        return "ok"

    @app.tool()
    def retire(name: str) -> str:
        app.disable([name])  # hidden from everyone, while serving
        return f"{name} retired"

    @app.tool()
    def ping() -> str:
        return "pong"

    return app


if __name__ == "__main__":
    unlock_app().run()
