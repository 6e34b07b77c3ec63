"""The authenticated caller of a request, and the refusal that asks for more scopes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified access token speaks for.

    ``subject`` is the token's ``sub`` (the user, or the client itself for
    client credentials), ``client_id`` the OAuth client it was issued to,
    ``scopes`` what it grants, ``claims`` everything the verifier learnt.
    """

    subject: str | None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    expires_at: float | None = None

    @property
    def key(self) -> str:
        """A stable identity for ownership checks: the subject, else the client."""
        return f"sub:{self.subject}" if self.subject is not None else f"client:{self.client_id}"

    def has_scopes(self, required: Iterable[str]) -> bool:
        return self.scopes.issuperset(required)


class InsufficientScope(Exception):
    """Raised where a request needs scopes its token lacks.

    Over HTTP the resource server answers 403 with ``WWW-Authenticate: Bearer
    error="insufficient_scope", scope="..."`` so the client can step up.
    """

    def __init__(self, required: Iterable[str]) -> None:
        self.required = tuple(sorted(set(required)))
        super().__init__(f"insufficient scope: needs {' '.join(self.required)}")
