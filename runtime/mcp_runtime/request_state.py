"""Sealing ``requestState``: the server's own state, held by the client between rounds.

A multi round-trip request (2026-07-28 on) hands the client an opaque
``requestState`` that comes back with the retry. The client must not be able to
forge or alter it, nor replay it against another method or tool, nor keep it
forever; so the runtime wraps what the handler returned as

    v1.<base64url(expiry || state)>.<base64url(HMAC-SHA256(key, len(binding) || binding || expiry || state))>

and checks it before the handler sees the state again. The binding is the
method and the tool, prompt or resource the request names. Servers that run as
several workers share one ``key``; the default is a random key per process.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct
import time

_PREFIX = "v1."
_EXPIRY = struct.Struct(">Q")
_LENGTH = struct.Struct(">I")


class StateError(ValueError):
    """A requestState that was not sealed by this key, was altered, or expired."""


class StateSealer:
    def __init__(self, key: bytes | None = None, lifetime: float = 3600.0) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self.lifetime = lifetime

    def seal(self, state: str, binding: str) -> str:
        expiry = _EXPIRY.pack(int(time.time() + self.lifetime))
        payload = expiry + state.encode()
        return f"{_PREFIX}{_b64(payload)}.{_b64(self._mac(binding, payload))}"

    def open(self, sealed: str, binding: str) -> str:
        if not sealed.startswith(_PREFIX) or sealed.count(".") != 2:
            raise StateError("requestState was not issued by this server")
        body, _, mac = sealed[len(_PREFIX) :].partition(".")
        try:
            payload = _unb64(body)
            expected = _unb64(mac)
        except (binascii.Error, ValueError):
            raise StateError("requestState is not valid base64url") from None
        if len(payload) < _EXPIRY.size or not hmac.compare_digest(expected, self._mac(binding, payload)):
            raise StateError("requestState failed its integrity check")
        (expiry,) = _EXPIRY.unpack_from(payload)
        if expiry < time.time():
            raise StateError("requestState has expired")
        try:
            return payload[_EXPIRY.size :].decode()
        except UnicodeDecodeError:
            raise StateError("requestState failed its integrity check") from None

    def _mac(self, binding: str, payload: bytes) -> bytes:
        # Length-prefixed: no binding and payload pair can pass for another
        # by moving bytes across their border.
        bound = binding.encode()
        return hmac.new(self._key, _LENGTH.pack(len(bound)) + bound + payload, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
