"""The JSON Schema reader of ``mcp-codegen server``.

Property-based: for input schemas drawn from the supported set, the generated
input type accepts exactly the instances the ``jsonschema`` package accepts
(valid instances drawn by hypothesis-jsonschema from each schema, and arbitrary
JSON values). One documented difference is kept out of the draw: an integer is
a Python int, so ``2.0`` where the schema says ``integer`` is refused by the
type (JSON Schema counts it an integer). Unit tests show what is loosened,
with the note the generated code prints, and the naming rule.
"""

from __future__ import annotations

import calendar
import json
import re
import string
import sys
import types
from typing import Any

import jsonschema
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from mcpbind_codegen.servers import generate, naming
from mcpbind_codegen.servers.snapshot import Snapshot

_COUNTER = iter(range(10**9))


def bindings(
    schema: dict[str, Any], output: dict[str, Any] | None = None
) -> tuple[str, types.ModuleType]:
    tool: dict[str, Any] = {"name": "probe", "inputSchema": schema}
    if output is not None:
        tool["outputSchema"] = output
    source = generate(Snapshot({"name": "probe", "version": "1"}, "2025-11-25", [tool]))
    name = f"_server_bindings_probe_{next(_COUNTER)}"
    module = types.ModuleType(name)
    sys.modules[name] = module  # msgspec resolves the annotations through the module
    exec(compile(source, name, "exec"), module.__dict__)
    return source, module


def accepts(type_: Any, instance: Any) -> bool:
    try:
        msgspec.convert(instance, type_)
        return True
    except msgspec.ValidationError:
        return False


# ---------------------------------------------------------------- the supported set

names = st.sampled_from(["a", "b", "c", "userId", "kind", "x-y"])
scalars = st.one_of(
    st.builds(
        lambda low, span: {"type": "string", "minLength": low, "maxLength": low + span},
        st.integers(0, 3),
        st.integers(0, 5),
    ),
    st.sampled_from(
        [
            {"type": "string"},
            {"type": "string", "pattern": "^[a-c]+$"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "number"},
            {"type": "integer"},
            {"enum": ["red", "green", 3, None]},
            {"const": "fixed"},
            {"type": ["string", "null"]},
            {"type": ["integer", "string"]},
        ]
    ),
    st.builds(
        lambda low, span: {"type": "integer", "minimum": low, "maximum": low + span},
        st.integers(-5, 5),
        st.integers(0, 10),
    ),
    st.builds(
        lambda low: {"type": "number", "exclusiveMinimum": low},
        st.integers(-3, 3),
    ),
)


def composite(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda item: {"type": "array", "items": item}, children),
        st.builds(
            lambda item, low: {
                "type": "array",
                "items": item,
                "minItems": low,
                "maxItems": low + 2,
            },
            children,
            st.integers(0, 2),
        ),
        st.builds(
            lambda a, b: {"type": "array", "prefixItems": [a, b], "minItems": 2, "items": False},
            children,
            children,
        ),
        st.builds(lambda value: {"type": "object", "additionalProperties": value}, children),
        st.builds(
            lambda props, closed: {
                "type": "object",
                "properties": props,
                "required": sorted(props)[:1],
                "additionalProperties": not closed,
            },
            st.dictionaries(names, children, min_size=1, max_size=3),
            st.booleans(),
        ),
        st.builds(
            lambda a, b: {"anyOf": [a, b]},
            st.sampled_from([{"type": "string"}, {"type": "integer"}]),
            st.sampled_from([{"type": "null"}, {"type": "array", "items": {"type": "boolean"}}]),
        ),
        st.just(
            {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}},
                        "required": ["kind"],
                    },
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "b"}, "s": {"type": "string"}},
                        "required": ["kind", "s"],
                    },
                ]
            }
        ),
    )


values = st.recursive(scalars, composite, max_leaves=6)
schemas = st.builds(
    lambda props, required, closed: {
        "type": "object",
        "properties": props,
        "required": [k for k in props if k in required],
        "additionalProperties": not closed,
    },
    st.dictionaries(names, values, min_size=1, max_size=4),
    st.sets(names),
    st.booleans(),
)

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-20, 20),
        # Integral floats are left out: the one documented difference (see the module doc).
        st.floats(-20, 20, allow_nan=False).filter(lambda f: not f.is_integer()),
        st.text(alphabet=string.ascii_lowercase[:4] + "Z", max_size=6),
        st.sampled_from(["red", "green", "fixed", "a", "b"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(["a", "b", "c", "userId", "kind", "x-y", "n", "s", "z"]),
            children,
            max_size=4,
        ),
    ),
    max_leaves=10,
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=schemas, data=st.data())
def test_the_input_type_accepts_exactly_what_json_schema_accepts(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    source, module = bindings(schema)
    assert "# looser:" not in source, "the drawn schemas are meant to be exact"
    validator = jsonschema.Draft202012Validator(schema)
    for _ in range(4):
        instance = data.draw(from_schema(schema).filter(_no_integral_floats))
        assert accepts(module.ProbeInput, instance), (instance, source)
    for _ in range(6):
        instance = data.draw(
            st.dictionaries(
                st.sampled_from(["a", "b", "c", "userId", "kind", "x-y", "z"]),
                json_values,
                max_size=5,
            )
        )
        assert accepts(module.ProbeInput, instance) == validator.is_valid(instance), (
            instance,
            source,
        )


def _no_integral_floats(value: Any) -> bool:
    if isinstance(value, float):
        return not value.is_integer()
    if isinstance(value, list):
        return all(_no_integral_floats(v) for v in value)
    if isinstance(value, dict):
        return all(_no_integral_floats(v) for v in value.values())
    return True


# ---------------------------------------------------------------- loosened, with a note


def test_what_python_cannot_say_is_looser_and_says_so() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "either": {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"type": "object", "properties": {"b": {"type": "integer"}}},
                ]
            },
            "unique": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            "tree": {"$ref": "#/$defs/tree"},
            "odd": {"type": "integer", "multipleOf": 0.5},
            "named": {"type": "string", "format": "date-time", "minLength": 3},
        },
        "$defs": {
            "tree": {
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/tree"}}]
            }
        },
    }
    source, module = bindings(schema)
    for note in (
        "# looser: a tuple of varying length (prefixItems without a fixed length): typed as a list of its items' union",
        "# looser: objects that no required constant property tells apart: typed as dict[str, Any]",
        "# looser: uniqueItems not checked",
        "# looser: recursive non-object schema '#/$defs/tree': typed as Any",
        "# looser: multipleOf 0.5 on an integer: not checked",
        "# looser: string bounds on format date-time: not checked",
    ):
        assert note in source, source
    loose = module.ProbeInput
    # Looser, never stricter: what the schema accepts still decodes.
    assert accepts(
        loose,
        {"pair": ["x", 1], "either": {"b": 2}, "unique": [1, 1], "tree": ["a", ["b"]], "odd": 3},
    )


def test_recursive_objects_and_formats_decode() -> None:
    schema = {
        "type": "object",
        "properties": {
            "root": {"$ref": "#/$defs/Node"},
            "at": {"type": "string", "format": "date-time"},
        },
        "required": ["root"],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["name"],
            }
        },
    }
    source, module = bindings(schema)
    decoded = msgspec.convert(
        {"root": {"name": "a", "children": [{"name": "b"}]}, "at": "2026-07-28T09:00:00Z"},
        module.ProbeInput,
    )
    assert decoded.root.children[0].name == "b" and decoded.at.year == 2026
    assert "class Node(" in source and "children: list[Node]" in source


def test_draft_07_and_2020_12_spellings_give_the_same_types() -> None:
    draft07 = {
        "type": "object",
        "definitions": {
            "p": {
                "type": "object",
                "properties": {"x": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
                "required": ["x"],
            }
        },
        "properties": {
            "p": {"$ref": "#/definitions/p"},
            "t": {
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "additionalItems": False,
                "minItems": 2,
            },
        },
    }
    modern = {
        "type": "object",
        "$defs": {
            "p": {
                "type": "object",
                "properties": {"x": {"type": "number", "exclusiveMinimum": 0}},
                "required": ["x"],
            }
        },
        "properties": {
            "p": {"$ref": "#/$defs/p"},
            "t": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
                "minItems": 2,
            },
        },
    }
    assert (
        bindings(draft07)[0].split("SNAPSHOT_SHA256")[1].split("\n", 1)[1]
        == bindings(modern)[0].split("SNAPSHOT_SHA256")[1].split("\n", 1)[1]
    )


def test_the_naming_rule() -> None:
    assert [
        naming.snake(n)
        for n in (
            "get-forecast",
            "getForecast",
            "get_forecast",
            "HTTPServer",
            "2fa",
            "class",
            "match",
        )
    ] == [
        "get_forecast",
        "get_forecast",
        "get_forecast",
        "http_server",
        "n_2_fa",
        "class_",
        "match_",
    ]
    assert naming.pascal("get-forecast") == "GetForecast" and naming.pascal("9lives") == "N9Lives"
    scope = naming.Scope(naming.PARAMETER_RESERVED)
    assert [scope.claim(n) for n in ("user_id", "user_id", "timeout", "user_id")] == [
        "user_id",
        "user_id_2",
        "timeout_",
        "user_id_3",
    ]
    source, module = bindings(
        {
            "type": "object",
            "properties": {
                "userId": {"type": "string"},
                "user_id": {"type": "integer"},
                "timeout": {"type": "number"},
            },
        }
    )
    decoded = msgspec.convert({"userId": "a", "user_id": 1, "timeout": 2.5}, module.ProbeInput)
    assert (decoded.user_id, decoded.user_id_2, decoded.timeout_) == ("a", 1, 2.5)
    assert 'timeout_: float | UnsetType = msgspec.field(name="timeout"' in source


# ---------------------------------------------------------------- formats and oneOf

# jsonschema checks date-time and time only with the rfc3339-validator package; the
# oracle here is RFC 3339 section 5.6 itself, registered on jsonschema's format checker.
_RFC3339 = re.compile(
    r"^(?:(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})[Tt])?"
    r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})(?:\.\d+)?"
    r"(?:[Zz]|[+-](?P<oh>\d{2}):(?P<om>\d{2}))$",
    re.ASCII,
)


def _rfc3339(instance: object, *, with_date: bool) -> bool:
    if not isinstance(instance, str):
        return True
    match = _RFC3339.match(instance)
    if match is None or (match["year"] is not None) != with_date:
        return False
    if with_date:
        year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
        if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year or 4, month)[1]:
            return False
    return (
        int(match["hour"]) <= 23
        and int(match["minute"]) <= 59
        and int(match["second"]) <= 60
        and int(match["oh"] or 0) <= 23
        and int(match["om"] or 0) <= 59
    )


FORMAT_CHECKER = jsonschema.FormatChecker()
FORMAT_CHECKER.checks("date-time")(lambda v: _rfc3339(v, with_date=True))
FORMAT_CHECKER.checks("time")(lambda v: _rfc3339(v, with_date=False))


def oracle(schema: dict[str, Any]) -> jsonschema.Validator:
    """jsonschema's 2020-12 validator, formats asserted."""
    return jsonschema.Draft202012Validator(schema, format_checker=FORMAT_CHECKER)


def _two(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda n: f"{n:02d}")


_times = st.builds(
    lambda h, m, s, fraction, offset: f"{h}:{m}:{s}{fraction}{offset}",
    _two(0, 25),
    _two(0, 61),
    # 60 is a leap second: RFC 3339 has it, Python's datetime has not (drawn apart below).
    _two(0, 61).filter(lambda s: s != "60"),
    st.sampled_from(["", ".5", ".123456", ".1234567", "."]),
    st.sampled_from(["Z", "z", "", "+01:00", "-00:00", "+23:59", "+24:00", "+0100", "+1:00"]),
)
_dates = st.builds(
    lambda y, m, d: f"{y}-{m}-{d}",
    st.sampled_from(["2024", "2026", "1900", "0001", "9999", "202"]),
    _two(0, 13),
    _two(0, 32),
)
FORMAT_CANDIDATES: dict[str, st.SearchStrategy[str]] = {
    "date-time": st.builds(
        lambda d, sep, t: f"{d}{sep}{t}", _dates, st.sampled_from(["T", "t", " ", "_"]), _times
    ),
    "time": _times,
    "date": st.one_of(_dates, st.sampled_from(["2026-5-1", "20260501", "2026-05-01T00"])),
    "uuid": st.one_of(
        st.uuids().map(str),
        st.uuids().map(lambda u: str(u).upper()),
        st.uuids().map(lambda u: u.hex),
        st.uuids().map(lambda u: "{%s}" % u),
        st.uuids().map(lambda u: f"urn:uuid:{u}"),
        st.uuids().map(lambda u: str(u)[:-1] + "g"),
        st.uuids().map(lambda u: str(u)[1:]),
    ),
}

# What each format's type takes beyond the format, as its `# looser:` note says.
LOOSER: dict[str, tuple[str, Any]] = {
    "date-time": (
        "# looser: format date-time: a space for `T` and an offset without a colon",
        lambda v: _rfc3339(
            re.sub(r"^(.{10}) ", r"\1T", re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", v)), with_date=True
        ),
    ),
    "time": (
        "# looser: format time: an offset without a colon",
        lambda v: _rfc3339(re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", v), with_date=False),
    ),
    "uuid": (
        "# looser: format uuid: 32 hex digits without hyphens",
        lambda v: re.fullmatch(r"[0-9a-fA-F]{32}", v) is not None,
    ),
}


@pytest.mark.parametrize("fmt", sorted(FORMAT_CANDIDATES))
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_format_is_exact_or_its_looser_note_names_what_else_it_takes(
    fmt: str, data: st.DataObject
) -> None:
    """A value the format accepts is accepted; one it refuses is refused, unless the
    `# looser:` comment printed above the field names its form."""
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    source, module = _cached_bindings(fmt, schema)
    validator = oracle(schema)
    note, looser = LOOSER.get(fmt, (None, lambda v: False))
    if note is not None:
        assert note in source, source
    else:
        assert "# looser:" not in source, source
    for instance in (
        data.draw(from_schema(schema["properties"]["v"])),
        data.draw(FORMAT_CANDIDATES[fmt]),
    ):
        valid = validator.is_valid({"v": instance})
        assert accepts(module.ProbeInput, {"v": instance}) == (valid or looser(instance)), (
            instance,
            valid,
        )


_SOURCES: dict[str, tuple[str, types.ModuleType]] = {}


def _cached_bindings(key: str, schema: dict[str, Any]) -> tuple[str, types.ModuleType]:
    if key not in _SOURCES:
        _SOURCES[key] = bindings(schema)
    return _SOURCES[key]


def test_a_date_time_without_an_offset_is_refused() -> None:
    """RFC 3339: ``date-time = full-date "T" full-time`` and ``full-time = partial-time
    time-offset``: the offset is not optional. A leap second and the year 0000, which
    RFC 3339 has and Python's datetime has not, are the documented difference."""
    source, module = bindings(
        {
            "type": "object",
            "properties": {
                "at": {"type": "string", "format": "date-time"},
                "t": {"type": "string", "format": "time"},
            },
        }
    )
    assert "at: Annotated[datetime.datetime, msgspec.Meta(tz=True)]" in source
    for refused in ({"at": "2026-05-01T10:00:00"}, {"t": "10:00:00"}):
        assert not accepts(module.ProbeInput, refused)
    assert accepts(module.ProbeInput, {"at": "2026-05-01T10:00:00+02:00", "t": "10:00:00Z"})
    for leap in ({"at": "2026-12-31T23:59:60Z"}, {"at": "0000-01-01T00:00:00Z"}):
        assert oracle({"properties": {"at": {"format": "date-time"}}}).is_valid(leap)
        assert not accepts(module.ProbeInput, leap)


ONE_OF_ARMS = [
    {"type": "integer"},
    {"type": "number", "minimum": 0},
    {"type": "string"},
    {"type": "string", "maxLength": 2},
    {"const": "a"},
    {"enum": [1, 2]},
    {"type": "boolean"},
    {"type": "null"},
    {"type": "array", "items": {"type": "integer"}},
]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    arms=st.lists(st.sampled_from(ONE_OF_ARMS), min_size=2, max_size=3, unique_by=json.dumps),
    data=st.data(),
)
def test_one_of_is_exact_or_says_exactly_one_is_not_checked(
    arms: list[dict[str, Any]], data: st.DataObject
) -> None:
    """``oneOf`` accepts a value that exactly one arm accepts: where the type cannot
    refuse a value two arms take, the note says so and the type is looser only;
    without the note the type accepts exactly what the schema does."""
    schema = {"type": "object", "properties": {"v": {"oneOf": arms}}, "required": ["v"]}
    source, module = bindings(schema)
    validator = oracle(schema)
    exact = "# looser:" not in source
    if exact:
        # No note: no JSON value two arms both take.
        assert "oneOf: that exactly one arm matches is not checked" not in source
    for _ in range(8):
        instance = {"v": data.draw(st.one_of(from_schema({"anyOf": arms}), json_values))}
        instance = instance if _no_integral_floats(instance) else {"v": None}
        valid = validator.is_valid(instance)
        if exact:
            assert accepts(module.ProbeInput, instance) == valid, (instance, source)
        elif valid:
            assert accepts(module.ProbeInput, instance), (instance, source)


def test_overlapping_one_of_arms_are_marked() -> None:
    """The case of the report: 5 matches both arms, so oneOf refuses it."""
    schema = {
        "type": "object",
        "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}},
    }
    source, module = bindings(schema)
    assert not oracle(schema).is_valid({"v": 5})
    assert "# looser: oneOf: that exactly one arm matches is not checked" in source
