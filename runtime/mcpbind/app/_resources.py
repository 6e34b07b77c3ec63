"""Resources and resource templates from functions.

``@app.resource("note://{id}")`` binds the variables of an RFC 6570 URI
template to the function's parameters: simple ``{var}`` (one path segment),
reserved ``{+var}`` (may span ``/``) and path ``{/var}`` expressions. The
variables and the parameters must agree when the decorator runs.
"""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import msgspec

from ..codec import join_paths
from ..methods import RequestContext
from ._context import Context, InputRounds
from ._errors import InputRequired, ResourceError, ToolError
from ._flavor import Flavor
from ._media import Audio, File, Image, resource_contents
from ._schema import Signature, analyse
from ._tools import check_scopes

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARIABLE = re.compile(r"^([+/]?)([A-Za-z_][A-Za-z0-9_]*)$")
# What each operator's expansion of one variable may contain.
_PATTERNS = {"": r"[^/?#]+", "+": r"[^?#]+", "/": r"[^/?#]+"}


class UriTemplate:
    """A URI template of level-1 (``{var}``), reserved (``{+var}``) and path
    (``{/var}``) expressions, matched against URIs."""

    __slots__ = ("template", "variables", "_regex")

    def __init__(self, template: str) -> None:
        self.template = template
        variables: list[str] = []
        pattern = ["^"]
        position = 0
        for match in _EXPRESSION.finditer(template):
            pattern.append(re.escape(template[position : match.start()]))
            variable = _VARIABLE.match(match.group(1))
            if variable is None:
                raise ValueError(
                    f"URI template {template!r}: unsupported expression {match.group(0)!r} "
                    "(one variable, with no operator, '+' or '/')"
                )
            operator, name = variable.groups()
            if name in variables:
                raise ValueError(f"URI template {template!r}: variable {name!r} appears twice")
            variables.append(name)
            prefix = "/" if operator == "/" else ""
            pattern.append(f"{prefix}(?P<{name}>{_PATTERNS[operator]})")
            position = match.end()
        rest = template[position:]
        if "{" in rest or "}" in rest:
            raise ValueError(f"URI template {template!r}: unbalanced braces")
        pattern.append(re.escape(rest) + "$")
        self.variables = tuple(variables)
        self._regex = re.compile("".join(pattern))

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri``, percent-decoded, or None if it does not match."""
        found = self._regex.match(uri)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}


class ResourceSpec:
    """A static resource (``template`` None) or a resource template."""

    __slots__ = (
        "uri",
        "template",
        "fn",
        "tags",
        "is_async",
        "signature",
        "mime_type",
        "wire",
        "scopes",
    )

    def __init__(
        self,
        uri: str,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: Sequence[Mapping[str, object]] | None = None,
        annotations: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
        scopes: Sequence[str] = (),
        tags: Iterable[str] = (),
    ) -> None:
        self.uri = uri
        self.fn = fn
        self.tags = frozenset(tags)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.signature: Signature = analyse(fn, context_type=Context, what="resource")
        self.template = UriTemplate(uri) if "{" in uri else None
        self.mime_type = mime_type
        self.scopes = frozenset(scopes)
        _check_variables(fn, self.template, self.signature)
        wire: dict[str, object] = {"name": name or fn.__name__}
        wire["uriTemplate" if self.template else "uri"] = uri
        for key, value in (
            ("title", title),
            ("mimeType", mime_type),
            ("size", size if self.template is None else None),
        ):
            if value is not None:
                wire[key] = value
        text = description if description is not None else self.signature.description
        if text is not None:
            wire["description"] = text
        if icons is not None:
            wire["icons"] = [dict(icon) for icon in icons]
        if annotations is not None:
            wire["annotations"] = dict(annotations)
        if meta is not None:
            wire["_meta"] = dict(meta)
        self.wire = wire

    async def read(
        self,
        uri: str,
        variables: Mapping[str, str],
        params: Any,
        request: RequestContext,
        flavor: Flavor,
    ) -> Any:
        """The ReadResourceResult of ``uri`` (with ``variables`` from its template)."""
        if self.scopes:
            check_scopes(request, self.scopes)
        try:
            kwargs = msgspec.structs.asdict(
                msgspec.convert(variables, self.signature.arguments, strict=False)
            )
        except msgspec.ValidationError as error:
            raise ResourceError(
                f"Invalid resource URI {uri!r}: {join_paths(str(error))}", {"uri": uri}
            ) from None
        rounds = None
        if self.signature.context_param is not None:
            if flavor.stateless:
                rounds = InputRounds.of(params)
            kwargs[self.signature.context_param] = Context(request, params, flavor, rounds)
        try:
            value = self.fn(**kwargs)
            if self.is_async:
                value = await value
        except ToolError as error:  # raised by the context (an answer that does not fit its form)
            raise ResourceError(str(error)) from None
        except InputRequired as asked:
            assert rounds is not None
            return flavor.input_required(asked, rounds.state())
        return flavor.types.ReadResourceResult(
            contents=self._contents(uri, value, flavor), **flavor.cache_hints
        )

    def _contents(self, uri: str, value: Any, flavor: Flavor) -> list[object]:
        types = flavor.types
        if isinstance(value, str):
            return [
                types.TextResourceContents(
                    uri=uri, text=value, mime_type=self.mime_type or "text/plain"
                )
            ]
        if isinstance(value, (bytes, bytearray, memoryview)):
            blob = base64.b64encode(value).decode("ascii")
            return [
                types.BlobResourceContents(
                    uri=uri, blob=blob, mime_type=self.mime_type or "application/octet-stream"
                )
            ]
        if isinstance(value, (Image, Audio, File)):
            return [resource_contents(uri, value, flavor)]
        if isinstance(value, list) and all(hasattr(item, "uri") for item in value):
            return value  # TextResourceContents / BlobResourceContents of any revision
        text = msgspec.json.encode(value).decode()
        return [
            types.TextResourceContents(
                uri=uri, text=text, mime_type=self.mime_type or "application/json"
            )
        ]


def _check_variables(
    fn: Callable[..., object], template: UriTemplate | None, signature: Signature
) -> None:
    names = set(signature.names)
    variables = set(template.variables) if template else set()
    required = set(signature.schema.get("required", ()))
    where = f"resource {getattr(fn, '__qualname__', fn)!r}"
    if variables - names:
        raise TypeError(
            f"{where}: template variables {sorted(variables - names)} have no parameter of that name"
        )
    if required - variables:
        raise TypeError(
            f"{where}: parameters {sorted(required - variables)} are not variables of {template.template if template else 'the URI'!r}"
        )
