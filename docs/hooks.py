"""mkdocs hooks of the documentation site.

The docstrings name objects with Sphinx roles (``:class:`Server```), which
mkdocstrings renders as text before the code span; the role is dropped so the
reference reads ``Server``.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj):(?=<code>)")


def on_page_content(html: str, **kwargs: Any) -> str:
    return _ROLE.sub("", html)
