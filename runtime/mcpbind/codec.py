"""Encoding and decoding of the generated MCP types.

msgspec decodes tagged unions and plain Structs natively. Two shapes of the MCP
schema need more, and this module is the one place that provides it:

* Open objects (``Result``, ``_meta`` with ``progressToken``, a tool's
  ``inputSchema``) must keep every key on a round trip. Structs drop unknown
  keys, so these are :class:`OpenObject`: a ``dict`` subclass with typed
  accessors for the keys the schema names.
* Unions of objects without a discriminating field
  (``TextResourceContents | BlobResourceContents``, the elicitation schema
  variants) are refused by msgspec. The generated code declares them with
  :func:`untagged_union`, and :func:`dec_hook` picks the variant that explains
  the instance best.
* Unions whose discriminating field may be absent (2026-07-28's result
  unions: ``resultType``, absent meaning "complete") come from
  :func:`discriminated_union`; a value that names no arm is refused.

Use :func:`decode`, :func:`convert`, :func:`decoder` and :func:`encode` (or pass
:func:`dec_hook` to msgspec yourself) whenever a generated type is involved.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, Self, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "UNSET",
    "UnsetType",
    "OpenObject",
    "new_object",
    "untagged_union",
    "discriminated_union",
    "dec_hook",
    "decode",
    "decoder",
    "convert",
    "encode",
]

T = TypeVar("T")

# A ValidationError raised inside a hook comes back from msgspec as
# "<inner message> (at `<inner path>`) - at `<outer path>`"; join the two paths.
_NESTED_PATH = re.compile(
    r"^(?P<msg>.*) \(at `\$(?P<inner>[^`]*)`\) - at `(?P<outer>\$[^`]*)`$", re.S
)
_PATH = re.compile(r"^(?P<msg>.*) - at `(?P<path>\$[^`]*)`$", re.S)
# The same from a hook called for the value at the root: no outer path.
_ROOT_NESTED_PATH = re.compile(r"^(?P<msg>.*) \(at `(?P<inner>\$[^`]*)`\)$", re.S)


def join_paths(message: str) -> str:
    """A validation error's message with the path of a value decoded inside a hook spliced
    into the outer one: ``... - at `$.outer.inner```, one path a reader can follow."""
    while True:
        match = _NESTED_PATH.match(message)
        if match is None:
            root = _ROOT_NESTED_PATH.match(message)
            return f"{root['msg']} - at `{root['inner']}`" if root else message
        message = f"{match['msg']} - at `{match['outer']}{match['inner']}`"


_join_paths = join_paths  # its name before it was public, for code not yet moved over


def _nested_error(error: msgspec.ValidationError) -> ValueError:
    """Re-raise a validation error from inside a hook so that msgspec prefixes
    the outer path and :func:`join_paths` can splice both together."""
    message = join_paths(str(error))
    match = _PATH.match(message)
    if match is None:
        return ValueError(message)
    return ValueError(f"{match['msg']} (at `{match['path']}`)")


class OpenObject(dict[str, Any]):
    """A JSON object whose known keys are typed and whose other keys are kept.

    Subclasses are generated: they set ``__keys__`` to a Struct that validates
    the known keys, and expose each known key as a typed property. Most also
    have a ``__from_json__`` static method, the fast decoder of parsed JSON
    (see "open objects from JSON" below).
    """

    __slots__ = ()
    __keys__: ClassVar[type[msgspec.Struct]]
    # Known keys whose decoded value is not plain JSON (a Struct, an OpenObject).
    __typed_keys__: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __init__(self, __known: Mapping[str, Any] = {}, **extra: Any) -> None:
        super().__init__(extra)
        for key, value in __known.items():
            if value is not UNSET:
                self[key] = value

    @classmethod
    def _decode(cls, raw: Any) -> Self:
        if not isinstance(raw, dict):
            raise ValueError(f"Expected `object`, got `{_json_kind(raw)}`")
        try:
            # convert() is about twice as fast without a hook; only keys that
            # hold generated types need it.
            if cls.__typed_keys__:
                known = msgspec.convert(raw, cls.__keys__, dec_hook=dec_hook)
            else:
                known = msgspec.convert(raw, cls.__keys__)
        except msgspec.ValidationError as error:
            raise _nested_error(error) from None
        obj = cls.__new__(cls)
        dict.update(obj, raw)
        for attr, key in cls.__typed_keys__:
            value = getattr(known, attr)
            if value is not UNSET:
                obj[key] = value
        return obj

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


# ------------------------------------------------------------ open objects from JSON
#
# msgspec hands an open object to the hook as parsed JSON; validating its
# known keys with msgspec.convert then builds a __keys__ Struct (copying every
# nested dict and list on the way) that is thrown away unless a key holds a
# generated type. For the classes without such keys, the generator writes a
# ``__from_json__`` decoder: plain type tests of the known keys (parsed JSON
# has only str keys and exact built-in types, so these tests are exact), then
# the object built straight from the input. Whatever the tests do not accept,
# or do not cover, goes to ``_decode``, which accepts it or raises its usual
# error: the result is the same either way, only faster. Extra keys are kept
# as always. The JSON decoders built by decoder() use it.

_JsonDecode = Callable[[Any], Any]
_UNBUILT: Any = object()
_json_decoders: dict[Any, _JsonDecode | None] = {}

_Open = TypeVar("_Open", bound=OpenObject)


class _NewObject(Protocol):
    def __call__(self, cls: type[_Open], /) -> _Open: ...


new_object = cast(_NewObject, dict.__new__)
"""``new_object(cls)``: an empty instance of an open-object class, without
``__init__``, for a generated ``__from_json__`` to fill with the JSON it
checked (bound once: looking ``__new__`` up on the class costs more)."""


def _json_dec_hook(type_: Any, raw: Any) -> Any:
    """The ``dec_hook`` of the JSON decoders built by :func:`decoder`: like
    :func:`dec_hook`, for input that is parsed JSON."""
    decode = _json_decoders.get(type_, _UNBUILT)
    if decode is _UNBUILT:
        is_open = isinstance(type_, type) and issubclass(type_, OpenObject)
        decode = _json_decoders[type_] = getattr(type_, "__from_json__", None) if is_open else None
    if decode is not None:
        return decode(raw)
    return dec_hook(type_, raw)


class _ObjectArm:
    """What the union dispatcher needs to know of one object variant."""

    __slots__ = ("type", "required", "declared", "consts")

    def __init__(self, arm: type) -> None:
        struct = arm.__keys__ if issubclass(arm, OpenObject) else arm
        info = msgspec.inspect.type_info(struct)
        assert isinstance(info, msgspec.inspect.StructType)
        self.type = arm
        self.required = frozenset(f.encode_name for f in info.fields if f.required)
        self.declared = frozenset(f.encode_name for f in info.fields)
        consts: dict[str, Any] = {}
        if info.tag_field is not None:
            consts[info.tag_field] = info.tag
            self.required |= {info.tag_field}
            self.declared |= {info.tag_field}
        for f in info.fields:
            literal = f.type
            if (
                isinstance(literal, msgspec.inspect.LiteralType)
                and len(literal.values) == 1
                and f.required
            ):
                consts[f.encode_name] = literal.values[0]
        self.consts = consts

    def score(self, raw: dict[str, Any]) -> int | None:
        """How many keys of ``raw`` this variant declares, or None if it cannot match."""
        if not self.required.issubset(raw):
            return None
        for key, value in self.consts.items():
            if raw.get(key) != value:
                return None
        return sum(1 for key in raw if key in self.declared)


class _UntaggedUnion(type):
    """Metaclass of the runtime stand-ins for unions msgspec cannot decode."""

    __arms__: tuple[Any, ...]
    # Filled on first use: the arms' annotations may name types defined later
    # in the generated module.
    __object_arms__: tuple[_ObjectArm, ...] | None
    __other_arms__: Any
    # Array arms beyond the first: msgspec takes one array type per union, so
    # with several (a batch of requests, a batch of responses) each is tried in turn.
    __array_arms__: tuple[Any, ...]

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _runtime_classes(cls.__arms__))

    def __repr__(cls) -> str:
        return cls.__name__

    def _prepare(cls) -> tuple[_ObjectArm, ...]:
        object_arms = cls.__object_arms__
        if object_arms is None:
            object_arms = tuple(_ObjectArm(a) for a in cls.__arms__ if _is_object_type(a))
            cls.__object_arms__ = object_arms
        return object_arms

    def _decode(cls, raw: Any) -> Any:
        object_arms = cls._prepare()
        if isinstance(raw, dict) and object_arms:
            return cls._decode_object(raw, object_arms)
        if isinstance(raw, list) and cls.__array_arms__:
            return cls._decode_first(raw, cls.__array_arms__)
        if cls.__other_arms__ is None:
            raise ValueError(f"Expected `object`, got `{_json_kind(raw)}`")
        try:
            return msgspec.convert(raw, cls.__other_arms__, dec_hook=dec_hook)
        except msgspec.ValidationError as error:
            raise _nested_error(error) from None

    def _decode_first(cls, raw: Any, candidates: tuple[Any, ...]) -> Any:
        first_error: msgspec.ValidationError | None = None
        for candidate in candidates:
            try:
                return msgspec.convert(raw, candidate, dec_hook=dec_hook)
            except msgspec.ValidationError as error:
                first_error = first_error or error
        assert first_error is not None
        raise _nested_error(first_error)

    def _decode_object(cls, raw: dict[str, Any], object_arms: tuple[_ObjectArm, ...]) -> Any:
        ranked = []
        for index, arm in enumerate(object_arms):
            score = arm.score(raw)
            if score is not None:
                # Prefer the variant that explains most keys, then the one that
                # declares fewest beyond them, then schema order.
                ranked.append((-score, len(arm.declared) - score, index, arm))
        if not ranked:
            names = ", ".join(arm.type.__name__ for arm in object_arms)
            raise ValueError(f"Object matches none of {names}")
        ranked.sort(key=lambda entry: entry[:3])
        first_error: msgspec.ValidationError | None = None
        for *_, arm in ranked:
            try:
                return msgspec.convert(raw, arm.type, dec_hook=dec_hook)
            except msgspec.ValidationError as error:
                first_error = first_error or error
        assert first_error is not None
        raise _nested_error(first_error)


def _runtime_classes(arms: tuple[Any, ...]) -> tuple[type, ...]:
    classes: list[type] = []
    for arm in arms:
        origin = typing.get_origin(arm)
        if origin is typing.Literal:
            classes.extend({type(v) for v in typing.get_args(arm)})
        elif origin is typing.Annotated:
            classes.extend(_runtime_classes(typing.get_args(arm)[:1]))
        elif origin in (typing.Union, types.UnionType):
            classes.extend(_runtime_classes(typing.get_args(arm)))
        elif origin is not None:
            classes.append(origin)
        elif arm is None:
            classes.append(type(None))
        elif arm is Any:
            classes.append(object)
        else:
            classes.append(arm)
    return tuple(classes)


def untagged_union(name: str, module: str, *arms: Any) -> type:
    """The runtime stand-in for ``arms[0] | arms[1] | ...`` used in annotations.

    Type checkers see the real union (the generated code declares it under
    ``TYPE_CHECKING``); msgspec sees a custom type and hands the decoded JSON
    to :func:`dec_hook`, which dispatches here.
    """
    others = [a for a in arms if not _is_object_type(a)]
    arrays = [a for a in others if _is_array_type(a)]
    if len(arrays) > 1:
        others = [a for a in others if not _is_array_type(a)]
    else:
        arrays = []
    other: Any = None
    if len(others) == 1:
        other = others[0]
    elif others:
        other = typing.Union[tuple(others)]
    namespace = {
        "__arms__": arms,
        "__object_arms__": None,
        "__other_arms__": other,
        "__array_arms__": tuple(arrays),
        "__module__": module,
        "__doc__": f"Runtime form of the union {' | '.join(_arm_name(a) for a in arms)}.",
    }
    return _UntaggedUnion(name, (), namespace)


class _DiscriminatedUnion(_UntaggedUnion):
    """Metaclass of the stand-ins for unions whose arms a field's value names."""

    __field__: str
    __absent__: str
    # Each value's arm, or the untagged stand-in of its arms when several share it.
    __by_value__: dict[str, Any]

    def _decode(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise ValueError(f"Expected `object`, got `{_json_kind(raw)}`")
        value = raw.get(cls.__field__, cls.__absent__)
        arm = cls.__by_value__.get(value) if isinstance(value, str) else None
        if arm is None:
            known = ", ".join(map(repr, cls.__by_value__))
            raise ValueError(
                f"Unrecognized `{cls.__field__}` {value!r}: expected one of {known}"
                f" (absent means {cls.__absent__!r})"
            )
        try:
            return msgspec.convert(raw, arm, dec_hook=dec_hook)
        except msgspec.ValidationError as error:
            # Never another arm instead: the value said which one this is.
            required = _ObjectArm(arm).required if _is_object_type(arm) else frozenset()
            missing = ", ".join(f"`{key}`" for key in sorted(required - raw.keys()))
            if not missing:
                raise _nested_error(error) from None
            said = repr(value) if cls.__field__ in raw else f"absent, so {value!r}"
            noun = "fields" if "," in missing else "field"
            raise ValueError(
                f"{_arm_name(arm)} lacks required {noun} {missing} ({cls.__field__} {said})"
            ) from None


def discriminated_union(
    name: str, module: str, field: str, absent: str, arms: Mapping[str, tuple[Any, ...]]
) -> type:
    """The runtime stand-in for a union whose arm the value of ``field`` names
    (``arms``: each value and its arms; several of one value are told apart as
    by :func:`untagged_union`), ``absent`` being the value of an object
    without the field. An object with any other value is refused."""
    by_value = {
        value: group[0] if len(group) == 1 else untagged_union(f"{name}[{value}]", module, *group)
        for value, group in arms.items()
    }
    flat = tuple(arm for group in arms.values() for arm in group)
    doc = f"Runtime form of the union {' | '.join(map(_arm_name, flat))}, told apart by {field}."
    namespace: dict[str, Any] = dict(__arms__=flat, __object_arms__=None, __other_arms__=None)
    namespace.update(__array_arms__=(), __field__=field, __absent__=absent, __by_value__=by_value)
    return _DiscriminatedUnion(name, (), {**namespace, "__module__": module, "__doc__": doc})


def _arm_name(arm: Any) -> str:
    return arm.__name__ if isinstance(arm, type) else repr(arm)


def _is_array_type(arm: Any) -> bool:
    origin = typing.get_origin(arm)
    if origin is typing.Annotated:
        return _is_array_type(typing.get_args(arm)[0])
    return (origin or arm) in (list, tuple, set, frozenset)


def _is_object_type(arm: Any) -> bool:
    return isinstance(arm, type) and issubclass(arm, (msgspec.Struct, OpenObject))


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if value is None:
        return "null"
    return type(value).__name__


def dec_hook(type_: Any, raw: Any) -> Any:
    """The msgspec ``dec_hook`` for generated types."""
    if isinstance(type_, _UntaggedUnion) or (
        isinstance(type_, type) and issubclass(type_, OpenObject)
    ):
        return type_._decode(raw)
    raise NotImplementedError(f"Type {type_!r} is not supported")


class JsonDecoder(Protocol):
    def decode(self, buf: bytes | bytearray | memoryview | str, /) -> Any: ...


class _ResultUnionDecoder:
    """Decodes a discriminated union (``InputRequiredResult | CallToolResult``)
    straight into the arm an absent field means, when that is what the field
    says; anything else takes the union's own way, which parses into Python
    objects first and costs about ten times as much."""

    __slots__ = ("_usual", "_attr", "_absent", "_union")

    def __init__(self, usual: type[msgspec.Struct], union: _DiscriminatedUnion) -> None:
        self._attr = next(
            f.name for f in msgspec.structs.fields(usual) if f.encode_name == union.__field__
        )
        self._absent = union.__absent__
        self._usual = msgspec.json.Decoder(usual, dec_hook=_json_dec_hook)
        self._union = msgspec.json.Decoder(union, dec_hook=_json_dec_hook)

    def decode(self, buf: bytes | bytearray | memoryview | str, /) -> Any:
        try:
            value = self._usual.decode(buf)
        except msgspec.ValidationError:
            return self._union.decode(buf)
        if getattr(value, self._attr) != self._absent:
            return self._union.decode(buf)
        return value


_decoders: dict[Any, JsonDecoder] = {}


def decoder(type_: Any) -> JsonDecoder:
    """A JSON decoder for ``type_``, built once per type and reused."""
    found = _decoders.get(type_)
    if found is None:
        found = _decoders[type_] = _build_decoder(type_)
    return found


def _build_decoder(type_: Any) -> JsonDecoder:
    if isinstance(type_, _DiscriminatedUnion):
        usual = type_.__by_value__[type_.__absent__]
        if isinstance(usual, type) and issubclass(usual, msgspec.Struct):
            return _ResultUnionDecoder(usual, type_)
    return msgspec.json.Decoder(type_, dec_hook=_json_dec_hook)


def decode(data: bytes | str, type_: type[T]) -> T:
    """Decode JSON into a generated type, validating it.

    Raises :class:`msgspec.ValidationError` naming the field path on bad input.
    """
    try:
        result: T = decoder(type_).decode(data)
    except msgspec.ValidationError as error:
        raise msgspec.ValidationError(join_paths(str(error))) from None
    return result


def convert(obj: Any, type_: type[T]) -> T:
    """Convert already-parsed JSON (dicts, lists, ...) into a generated type."""
    try:
        result: T = msgspec.convert(obj, type_, dec_hook=dec_hook)
    except msgspec.ValidationError as error:
        raise msgspec.ValidationError(join_paths(str(error))) from None
    return result


_encoder = msgspec.json.Encoder()


def encode(obj: Any) -> bytes:
    """Encode a generated type (or any JSON-compatible value) to JSON bytes."""
    return _encoder.encode(obj)


# ---------------------------------------------------------------- unknown union arms on receive

# msgspec's error for a tag no arm of a tagged union has: the path ends in the tag field.
_UNKNOWN_TAG = re.compile(
    r"^Invalid value .* - at `\$(?P<path>(?:\.[A-Za-z_][\w-]*|\[\d+\])*)\.(?:type|method|kind|mode)`$",
    re.S,
)
_SEGMENT = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")
# How many unknown values one message may carry before it is refused after all.
MAX_UNKNOWN = 64


class UnknownValue(dict[str, Any]):
    """A value a peer sent as one arm of a tagged union (a content block, a
    message) with a tag this revision does not know, typically from a later
    revision (a ``resource_link`` block from a 2025-06-18 server to a
    2024-11-05 client). It is the JSON object as received and encodes back
    unchanged; ``tag`` is the value of its discriminating field."""

    __slots__ = ()

    @property
    def tag(self) -> Any:
        for key in ("type", "method", "kind", "mode"):
            if key in self:
                return self[key]
        return None

    def __repr__(self) -> str:
        return f"UnknownValue({dict.__repr__(self)})"


def decode_lenient(data: bytes | str, type_: type[T]) -> T:
    """Decode what a peer sent, keeping list items of unknown union arms.

    The strict decode comes first (and is all a valid message costs). If it
    fails on a tag no arm has, the innermost list item around it (the content
    block itself, or the message holding it when the union is a single field)
    is decoded as an :class:`UnknownValue` instead and the rest as usual. Any
    other error, or an unknown tag outside every list, raises the strict
    decode's error (or, past unknown arms, the next one). What we send is
    never decoded this way."""
    try:
        return decode(data, type_)
    except msgspec.ValidationError as error:
        if _unknown_item(str(error)) is None:
            raise
    value = msgspec.json.decode(data)
    removed: list[tuple[list[Any], int, Any]] = []
    while True:
        try:
            result: T = convert(value, type_)
        except msgspec.ValidationError as error:
            place = _unknown_item(str(error))
            if place is None or len(removed) >= MAX_UNKNOWN:
                raise
            wire_path, index = place
            items = _walk(value, wire_path)
            removed.append((wire_path, index, items.pop(index)))
            continue
        break
    for wire_path, index, item in reversed(removed):
        _walk_decoded(result, wire_path).insert(index, UnknownValue(item))
    return result


def _unknown_item(message: str) -> tuple[list[Any], int] | None:
    """The path of the list and the index of the item around an unknown tag."""
    match = _UNKNOWN_TAG.match(message)
    if match is None:
        return None
    path: list[Any] = [
        name if name else int(index) for name, index in _SEGMENT.findall(match["path"])
    ]
    for cut in range(len(path) - 1, -1, -1):
        if isinstance(path[cut], int):
            return path[:cut], path[cut]
    return None


def _walk(value: Any, path: list[Any]) -> Any:
    for step in path:
        value = value[step]
    return value


def _walk_decoded(value: Any, path: list[Any]) -> Any:
    """Follow wire names and indexes through decoded Structs, open objects and lists."""
    for step in path:
        if isinstance(value, msgspec.Struct):
            attribute = next(f.name for f in msgspec.structs.fields(value) if f.encode_name == step)
            value = getattr(value, attribute)
        else:
            value = value[step]
    return value
