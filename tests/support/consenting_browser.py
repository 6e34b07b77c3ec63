"""A stand-in for the system browser of a command-line client under test:
``BROWSER="python consenting_browser.py %s"`` makes Python's webbrowser run it
with the authorization URL. It logs in and consents at oidc-provider as the
user ``judy`` and brings the answer back to the client's loopback redirect
URI, as a person's browser would."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.oidc_provider import play_user  # noqa: E402


def main(url: str) -> None:
    redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    answer = play_user(url, redirect_uri, "judy")
    httpx.get(f"{redirect_uri}?{urlencode(answer)}", timeout=10)


if __name__ == "__main__":
    main(sys.argv[1])
