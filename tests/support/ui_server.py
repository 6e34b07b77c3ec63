"""An MCP Apps server written with the app layer: a ``ui://`` page with its
CSP and permissions, a tool linked to it for the model and the App, and one
only the App calls. Run as a script, it serves over stdio."""

from __future__ import annotations

from typing import Any

from mcpbind.app import App, Context, UiCsp, UiPermissions

PAGE_URI = "ui://weather/dashboard.html"
PAGE = "<!doctype html><title>weather</title><main id=app>loading</main>"
CSP = {
    "connectDomains": ["https://api.weather.example"],
    "resourceDomains": ["https://cdn.example"],
}


def ui_app() -> App[Any]:
    app = App("weather", "1.0")
    dashboard = app.ui_resource(
        PAGE_URI,
        PAGE,
        title="Weather dashboard",
        csp=UiCsp(
            connect_domains=["https://api.weather.example"],
            resource_domains=["https://cdn.example"],
        ),
        permissions=UiPermissions(geolocation={}),
        prefers_border=True,
    )

    @app.tool(ui=dashboard)
    def forecast(city: str, ctx: Context) -> str:
        """The forecast of a city, shown on the dashboard where the host renders Apps."""
        if ctx.client_supports_ui():
            return f"Forecast for {city} is on the dashboard."
        return f"{city}: sunny, 21 °C, light wind from the west."

    @app.tool(ui=dashboard, ui_visibility=["app"])
    def refresh(city: str) -> dict[str, float]:
        """Fresh readings for the dashboard (called by the App, not the model)."""
        return {"temperature": 21.0, "wind": 3.5}

    @app.tool()
    def plain() -> str:
        return "no UI here"

    return app


if __name__ == "__main__":
    ui_app().run("stdio")
