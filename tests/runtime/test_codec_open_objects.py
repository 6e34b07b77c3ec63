"""Open objects decoded from JSON without msgspec.convert give exactly what convert gives.

The JSON decoders check the known keys of most open objects (a tool's
inputSchema, Result, _meta) with the type tests of the generated
``__from_json__`` instead of building their ``__keys__`` Struct. Those tests
must never accept what convert refuses, and decoding must give the same object
or the same error either way.
"""

from __future__ import annotations

import importlib
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpbind import codec
from mcpbind.codec import OpenObject

REVISIONS = ("v2024_11_05", "v2025_03_26", "v2025_06_18", "v2025_11_25", "v2026_07_28")


def _open_object_classes() -> list[type[OpenObject]]:
    found = []
    for revision in REVISIONS:
        module = importlib.import_module(f"mcpbind_protocol.{revision}.types")
        for name in sorted(vars(module)):
            value = getattr(module, name)
            if (
                isinstance(value, type)
                and issubclass(value, OpenObject)
                and value is not OpenObject
            ):
                found.append(value)
    return found


CLASSES = _open_object_classes()
FAST = [cls for cls in CLASSES if "__from_json__" in vars(cls)]

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


def _example_value(t: msgspec.inspect.Type) -> st.SearchStrategy[Any]:
    """Values of the declared type, mostly, so that the valid path is exercised too."""
    if isinstance(t, msgspec.inspect.StrType):
        return st.text(max_size=5)
    if isinstance(t, msgspec.inspect.IntType):
        return st.integers()
    if isinstance(t, msgspec.inspect.FloatType):
        return st.floats(allow_nan=False) | st.integers()
    if isinstance(t, msgspec.inspect.BoolType):
        return st.booleans()
    if isinstance(t, msgspec.inspect.NoneType):
        return st.none()
    if isinstance(t, msgspec.inspect.LiteralType):
        return st.sampled_from(t.values)
    if isinstance(t, msgspec.inspect.UnionType):
        return st.one_of([_example_value(arm) for arm in t.types])
    if isinstance(t, msgspec.inspect.ListType):
        return st.lists(_example_value(t.item_type), max_size=3)
    if isinstance(t, msgspec.inspect.DictType):
        return st.dictionaries(st.text(max_size=4), _example_value(t.value_type), max_size=3)
    return json_values


@st.composite
def raw_objects(draw: st.DrawFn, cls: type[OpenObject]) -> dict[str, Any]:
    info = msgspec.inspect.type_info(cls.__keys__)
    assert isinstance(info, msgspec.inspect.StructType)
    raw: dict[str, Any] = draw(st.dictionaries(st.text(max_size=4), json_values, max_size=3))
    for field in info.fields:
        choice = draw(st.sampled_from(("typed", "typed", "typed", "any", "absent")))
        if choice == "typed":
            raw[field.encode_name] = draw(_example_value(field.type))
        elif choice == "any":
            raw[field.encode_name] = draw(json_values)
        else:
            raw.pop(field.encode_name, None)
    return raw


def _through_convert(cls: type[OpenObject], raw: dict[str, Any]) -> Any:
    saved = codec._json_decoders.get(cls, codec._UNBUILT)
    codec._json_decoders[cls] = None
    try:
        return _outcome(cls, raw)
    finally:
        if saved is codec._UNBUILT:
            del codec._json_decoders[cls]
        else:
            codec._json_decoders[cls] = saved


def _outcome(cls: type[OpenObject], raw: dict[str, Any]) -> Any:
    try:
        obj = codec.decode(msgspec.json.encode(raw), cls)
    except msgspec.ValidationError as error:
        return ("error", str(error))
    return (type(obj), dict(obj))


def test_most_open_objects_take_the_fast_path() -> None:
    names = {cls.__name__ for cls in FAST}
    assert {"ToolInputSchema", "ToolOutputSchema", "Result"} <= names


@pytest.mark.parametrize(
    "cls", FAST, ids=lambda cls: f"{cls.__module__.split('.')[1]}.{cls.__name__}"
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_path_agrees_with_convert(cls: type[OpenObject], data: st.DataObject) -> None:
    raw = data.draw(raw_objects(cls))
    parsed = msgspec.json.decode(msgspec.json.encode(raw))
    taken: list[Any] = []
    slow = cls._decode
    cls._decode = lambda r: taken.append(r) or slow(r)  # type: ignore[method-assign]
    try:
        try:
            cls.__from_json__(parsed)  # type: ignore[attr-defined]
        except ValueError:
            pass
    finally:
        del cls._decode
    if not taken:  # accepted without convert: convert must accept it too
        msgspec.convert(parsed, cls.__keys__)
    assert _outcome(cls, raw) == _through_convert(cls, raw)


def test_extra_keys_are_kept_and_declared_keys_validated() -> None:
    from mcpbind_protocol import v2025_11_25 as v

    raw = b'{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"x-extra":{"k":[1]}}'
    schema = codec.decode(raw, v.ToolInputSchema)
    assert isinstance(schema, v.ToolInputSchema)
    assert schema["x-extra"] == {"k": [1]} and schema.required == ["a"]
    with pytest.raises(
        msgspec.ValidationError, match=r"Expected `str`, got `int`.*`\$\.required\[0\]`"
    ):
        codec.decode(b'{"type":"object","required":[1]}', v.ToolInputSchema)
    with pytest.raises(
        msgspec.ValidationError, match=r"at `\$\.tools\[0\]\.inputSchema\.properties"
    ):
        codec.decode(
            b'{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"a":1}}}]}',
            v.ListToolsResult,
        )
