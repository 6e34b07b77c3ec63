"""What a resource server learns from its authorization server: its metadata
(RFC 8414, or OpenID Connect Discovery) and the JSON documents it names."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx2
import msgspec

from .._answers import Answer, UnreadableAnswer, read_answer
from .._metadata import authorization_server_metadata_urls
from ._verifier import VerifierUnavailable

TIMEOUT = 10.0


def new_http_client() -> httpx2.AsyncClient:
    # Never follow redirects: a document is trusted for the URL it was asked at.
    return httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False)


class VerifierHTTP:
    """The HTTP client of a verifier: the application's, or one of its own
    made at first use and closed by :meth:`aclose`."""

    def __init__(self, given: httpx2.AsyncClient | None) -> None:
        self._http = given
        self._own = given is None

    def get(self) -> httpx2.AsyncClient:
        if self._http is None:
            self._http = new_http_client()
        return self._http

    async def aclose(self) -> None:
        if self._own and self._http is not None:
            await self._http.aclose()
            self._http = None


async def ask(http: httpx2.AsyncClient, method: str, url: str, what: str, **options: Any) -> Answer:
    """The answer of the authorization server to ``method url`` (``options``
    as ``read_answer`` takes them); VerifierUnavailable naming ``what`` when
    there is none, or none it can read (too large, compressed)."""
    try:
        return await read_answer(http, method, url, **options)
    except httpx2.HTTPError as error:
        raise VerifierUnavailable(
            f"cannot fetch {what} from {url}: {type(error).__name__}"
        ) from None
    except UnreadableAnswer as error:
        raise VerifierUnavailable(f"{what} at {url} {error.problem}") from None


async def fetch_json(http: httpx2.AsyncClient, url: str, what: str) -> Any:
    """The JSON document at ``url``; VerifierUnavailable naming ``what`` if it cannot be had."""
    response = await ask(http, "GET", url, what, headers={"accept": "application/json"})
    if response.status_code != 200:
        raise VerifierUnavailable(f"cannot fetch {what} from {url}: HTTP {response.status_code}")
    return decode_json(response.content, url, what)


def decode_json(content: bytes, url: str, what: str) -> Any:
    try:
        return msgspec.json.decode(content)
    except msgspec.DecodeError:
        raise VerifierUnavailable(f"{what} at {url} is not JSON") from None


async def authorization_server_metadata(http: httpx2.AsyncClient, issuer: str) -> dict[str, Any]:
    """The metadata of ``issuer``, from the first well-known URL that has it.

    The document must name ``issuer`` exactly (RFC 8414 §3.3): one that names
    another could send the keys or the introspection of a different server."""
    for url in authorization_server_metadata_urls(issuer):
        response = await ask(
            http,
            "GET",
            url,
            "the authorization server metadata",
            headers={"accept": "application/json"},
        )
        if response.status_code in (400, 401, 403, 404, 405):
            continue  # not served there: try the next form
        if response.status_code != 200:
            raise VerifierUnavailable(
                f"cannot fetch the authorization server metadata from {url}: HTTP {response.status_code}"
            )
        document = decode_json(response.content, url, "the authorization server metadata")
        if not isinstance(document, dict):
            raise VerifierUnavailable(
                f"the authorization server metadata at {url} is not a JSON object"
            )
        if document.get("issuer") != issuer:
            raise VerifierUnavailable(
                f"the authorization server metadata at {url} names issuer {document.get('issuer')!r}, not {issuer!r}"
            )
        return document
    raise VerifierUnavailable(f"no authorization server metadata found for issuer {issuer!r}")


async def endpoint(http: httpx2.AsyncClient, issuer: str, member: str) -> str:
    """The URL the metadata of ``issuer`` gives for ``member`` (``jwks_uri``, ``introspection_endpoint``)."""
    metadata = await authorization_server_metadata(http, issuer)
    value = metadata.get(member)
    if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
        raise VerifierUnavailable(
            f"the authorization server metadata of {issuer!r} has no valid {member}"
        )
    return value
