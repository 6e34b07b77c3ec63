"""Sealing ``requestState``: the server's own state, held by the client between rounds.

A multi round-trip request (2026-07-28 on) hands the client an opaque
``requestState`` that comes back with the retry. The client must not be able to
forge or alter it, nor replay it against another method, tool or caller, nor
keep it forever, nor bring it back with other arguments; so the runtime wraps
what the handler returned as

    v3.<base64url(payload)>.<base64url(HMAC-SHA256(key, binding || payload))>

or, with ``encrypt=True``, so that the client cannot read it either, as

    v4.<base64url(nonce || AES-256-GCM(payload, associated data: binding))>

where ``payload`` is ``expiry || SHA-256(arguments) || state``, and checks it
before the handler sees the state again. The binding is the method, the
tool, prompt or resource the request names, and the authenticated caller
where there is one, each part length-prefixed; the arguments are those of
the request that was answered (their canonical JSON, keys sorted), so a
retry with other arguments is told so rather than served with a state
meant for another call. Only the canonical
base64url text of each part is accepted (no padding, no stray characters, no
unused bits set), so one sealed state has exactly one spelling. Servers that run
as several workers share one ``key`` of at least 32 bytes; the default is a
random key per process. Encryption uses the ``cryptography`` package (the
``crypto`` extra).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct
import time
from collections.abc import Sequence
from typing import Any

import msgspec

_PREFIX = "v3."
_SEALED_PREFIX = "v4."
_EXPIRY = struct.Struct(">Q")
_DIGEST = hashlib.sha256().digest_size
_LENGTH = struct.Struct(">I")
_NONCE = 12
MIN_KEY_BYTES = 32


class StateError(ValueError):
    """A requestState that was not sealed by this key, was altered, or expired."""


class StateSealer:
    """Seals and opens requestState with ``key`` (at least 32 bytes; random by default).

    ``encrypt``: seal with AES-256-GCM (the client sees only ciphertext)
    instead of an HMAC over the plain state."""

    def __init__(
        self, key: bytes | None = None, lifetime: float = 3600.0, *, encrypt: bool = False
    ) -> None:
        if key is not None and len(key) < MIN_KEY_BYTES:
            raise ValueError(
                f"a requestState key needs at least {MIN_KEY_BYTES} bytes (got {len(key)}); use secrets.token_bytes(32)"
            )
        self._key = key if key is not None else secrets.token_bytes(MIN_KEY_BYTES)
        self.lifetime = lifetime
        self._cipher: Any = None
        if encrypt:
            try:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            except ImportError:
                raise RuntimeError(
                    "encrypted requestState needs the cryptography package: pip install 'mcpbind[crypto]'"
                ) from None
            # Its own key, derived from the shared one: the MAC key is never an AES key.
            self._cipher = AESGCM(
                hmac.new(self._key, b"mcp requestState AES-256-GCM", hashlib.sha256).digest()
            )

    @property
    def encrypts(self) -> bool:
        return self._cipher is not None

    def seal(self, state: str, binding: str | Sequence[str], arguments: Any = None) -> str:
        """``state`` sealed for requests of ``binding`` with these ``arguments``."""
        payload = (
            _EXPIRY.pack(int(time.time() + self.lifetime))
            + arguments_digest(arguments)
            + state.encode()
        )
        bound = _bound(binding)
        if self._cipher is not None:
            nonce = secrets.token_bytes(_NONCE)
            return f"{_SEALED_PREFIX}{_b64(nonce + self._cipher.encrypt(nonce, payload, bound))}"
        return f"{_PREFIX}{_b64(payload)}.{_b64(self._mac(bound, payload))}"

    def open(self, sealed: str, binding: str | Sequence[str], arguments: Any = None) -> str:
        """The state, if ``sealed`` was sealed by this key for ``binding`` and ``arguments``."""
        bound = _bound(binding)
        if self._cipher is not None:
            payload = self._decrypt(sealed, bound)
        else:
            payload = self._verify(sealed, bound)
        (expiry,) = _EXPIRY.unpack_from(payload)
        if expiry < time.time():
            raise StateError("requestState has expired")
        issued_for = payload[_EXPIRY.size : _EXPIRY.size + _DIGEST]
        if not hmac.compare_digest(issued_for, arguments_digest(arguments)):
            raise StateError(
                "requestState was issued for a request with other arguments: retry with the same arguments"
            )
        try:
            return payload[_EXPIRY.size + _DIGEST :].decode()
        except UnicodeDecodeError:
            raise StateError("requestState failed its integrity check") from None

    def _verify(self, sealed: str, bound: bytes) -> bytes:
        if not sealed.startswith(_PREFIX) or sealed.count(".") != 2:
            raise StateError("requestState was not issued by this server")
        body, _, mac = sealed[len(_PREFIX) :].partition(".")
        payload, expected = _unb64(body), _unb64(mac)
        if len(payload) < _EXPIRY.size + _DIGEST or not hmac.compare_digest(
            expected, self._mac(bound, payload)
        ):
            raise StateError("requestState failed its integrity check")
        return payload

    def _decrypt(self, sealed: str, bound: bytes) -> bytes:
        from cryptography.exceptions import InvalidTag

        if not sealed.startswith(_SEALED_PREFIX) or sealed.count(".") != 1:
            raise StateError("requestState was not issued by this server")
        data = _unb64(sealed[len(_SEALED_PREFIX) :])
        if len(data) < _NONCE + 16 + _EXPIRY.size + _DIGEST:
            raise StateError("requestState failed its integrity check")
        try:
            payload: bytes = self._cipher.decrypt(data[:_NONCE], data[_NONCE:], bound)
        except InvalidTag:
            raise StateError("requestState failed its integrity check") from None
        return payload

    def _mac(self, bound: bytes, payload: bytes) -> bytes:
        return hmac.new(self._key, bound + payload, hashlib.sha256).digest()


def arguments_digest(arguments: Any) -> bytes:
    """SHA-256 of the canonical JSON of a request's arguments (object keys
    sorted): the same arguments sent in another order have the same digest."""
    return hashlib.sha256(msgspec.json.encode(arguments, order="sorted")).digest()


def _bound(binding: str | Sequence[str]) -> bytes:
    """The binding as bytes, each part length-prefixed and the parts counted:
    no two bindings, nor a binding and a payload, can pass for one another by
    moving bytes across a border."""
    parts = [binding] if isinstance(binding, str) else list(binding)
    out = [_LENGTH.pack(len(parts))]
    for part in parts:
        encoded = part.encode()
        out.append(_LENGTH.pack(len(encoded)) + encoded)
    return b"".join(out)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """Decode canonical unpadded base64url, or raise StateError: the decoder
    alone skips stray characters and ignores unused bits, so several texts
    would open to the same state."""
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise StateError("requestState is not valid base64url") from None
    if _b64(data) != text:
        raise StateError("requestState is not canonical base64url")
    return data
