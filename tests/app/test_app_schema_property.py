"""For generated signatures, the input schema the application layer derives
accepts exactly the argument objects its msgspec decode accepts.

The schema is checked with the ``jsonschema`` package (Draft 2020-12). One
difference is by design and stated here: JSON Schema calls ``1.0`` an
integer, msgspec (strict, as tool arguments are decoded) does not; the
validator below counts only Python ints (not bools) as integers, which is
what a JSON decoder gives for ``1``.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from typing import Annotated, Any, Literal, Optional, TypedDict

import jsonschema
import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typing_extensions import NotRequired

from mcpbind.app import Context
from mcpbind.app._schema import analyse

NAMES = ("alpha", "beta", "gamma", "delta", "epsilon")


class Point(msgspec.Struct):
    x: int
    y: float = 0.0


class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


class Span(TypedDict):
    start: int
    end: NotRequired[int]


@dataclasses.dataclass
class Box:
    label: str
    size: int = 1


_integer_checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda checker, value: isinstance(value, int) and not isinstance(value, bool)
)
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, type_checker=_integer_checker
)


def leaf_types() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from([int, float, str, bool, Any, Point, Shade, Span, Box]),
        st.builds(
            lambda lo, span: Annotated[int, msgspec.Meta(ge=lo, le=lo + span)],
            st.integers(-5, 5),
            st.integers(0, 10),
        ),
        st.builds(
            lambda lo, span: Annotated[str, msgspec.Meta(min_length=lo, max_length=lo + span)],
            st.integers(0, 3),
            st.integers(0, 3),
        ),
        st.builds(lambda lo: Annotated[float, msgspec.Meta(gt=lo)], st.integers(-3, 3)),
        st.lists(
            st.one_of(st.text(max_size=3), st.integers(-3, 3)), min_size=1, max_size=3, unique=True
        ).map(
            lambda values: Literal[tuple(values)]  # type: ignore[misc]
        ),
    )


def types_() -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf_types(),
        lambda inner: st.one_of(
            inner.map(lambda t: list[t]),  # type: ignore[valid-type]
            inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
            inner.map(lambda t: Optional[t]),
            st.tuples(inner, inner).map(lambda pair: tuple[pair[0], pair[1]]),  # type: ignore[valid-type]
        ),
        max_leaves=3,
    )


@st.composite
def signatures(draw: st.DrawFn) -> Any:
    count = draw(st.integers(0, len(NAMES)))
    parameters = []
    annotations: dict[str, Any] = {}
    for name in NAMES[:count]:
        annotation = draw(types_())
        annotations[name] = annotation
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)
        )
    if draw(st.booleans()):
        annotations["ctx"] = Context
        parameters.append(
            inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        )

    def tool(**kwargs: Any) -> str:
        return ""

    tool.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    tool.__annotations__ = {**annotations, "return": str}
    return tool


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-20, 20)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


def accepted(arguments: Any, struct: type) -> bool:
    try:
        msgspec.convert(arguments, struct)
    except msgspec.ValidationError:
        return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_schema_and_decode_agree(data: st.DataObject) -> None:
    tool = data.draw(signatures())
    signature = analyse(tool, context_type=Context, what="tool")
    assert signature.context_param == ("ctx" if "ctx" in tool.__annotations__ else None)
    validator = Validator(signature.schema)
    Validator.check_schema(signature.schema)
    # Objects near the schema: some members right, some wrong, some missing.
    near_objects = st.dictionaries(
        st.sampled_from(["x", "y", "start", "end", "label", "size"]), json_values, max_size=3
    )
    values = st.one_of(json_values, near_objects, st.sampled_from(["light", "dark", "dim"]))
    arguments = data.draw(st.dictionaries(st.sampled_from(NAMES), values, max_size=len(NAMES)))
    assert validator.is_valid(arguments) == accepted(arguments, signature.arguments), (
        signature.schema,
        arguments,
    )


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_every_instance_of_the_schema_is_accepted(data: st.DataObject) -> None:
    from hypothesis_jsonschema import from_schema

    tool = data.draw(signatures())
    signature = analyse(tool, context_type=Context, what="tool")
    arguments = data.draw(from_schema(signature.schema))
    # from_schema may give 1.0 for an integer (see the module docstring).
    if not Validator(signature.schema).is_valid(arguments):
        return
    assert accepted(arguments, signature.arguments), (signature.schema, arguments)
    assert typing.get_type_hints(tool)  # the signature is real to the type machinery
