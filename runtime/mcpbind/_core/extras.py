"""Optional dependencies: the one-line error that names the extra to install.

The core (codec, session, stdio, the ASGI applications) needs only msgspec;
features with other dependencies import them through here, so that a missing
one says which extra brings it instead of failing deep in an import chain.
"""

from __future__ import annotations

DISTRIBUTION = "mcpbind"


class MissingExtra(ImportError):
    """A feature's optional dependency is not installed."""

    def __init__(self, feature: str, extra: str, missing: str | None) -> None:
        super().__init__(
            f"{feature} needs the {extra!r} extra: pip install '{DISTRIBUTION}[{extra}]'"
            + (f" ({missing} is not installed)" if missing else ""),
            name=missing,
        )
        self.extra = extra
