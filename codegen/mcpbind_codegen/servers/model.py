"""From a snapshot to what the template prints: the Structs, and one method of
the facade per tool, prompt and resource template, every name and annotation
decided here (the template only loops)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model import GenerationError, docstring
from . import naming
from .schema import Reader, Registry
from .snapshot import Snapshot
from .types import AnyT, Field, Imports, MapT, Named, Scalar, Struct

_OPTIONS = (
    ("timeout", "float | None", "None"),
    ("on_progress", "ProgressCallback | None", "None"),
)


@dataclass
class Parameter:
    name: str
    annotation: str
    default: str | None  # Python source, None for a required parameter

    @property
    def source(self) -> str:
        return f"{self.name}: {self.annotation}" + (
            f" = {self.default}" if self.default is not None else ""
        )


@dataclass
class Method:
    """One method of the facade."""

    name: str
    kind: str  # tool, prompt, resource template
    wire_name: str
    description: str | None
    parameters: list[Parameter]
    returns: str
    call: str  # the body's expression
    typed_local: bool = False  # the call answers Any: bound to a typed local first
    notes: list[str] = field(default_factory=list)

    @property
    def signature(self) -> str:
        params = ", ".join(p.source for p in self.parameters)
        return f"self, *, {params}" if params else "self"

    @property
    def doc(self) -> str | None:
        return docstring(self.description)


@dataclass
class BindingModule:
    snapshot: Snapshot
    facade: str
    structs: list[Struct]
    methods: list[Method]
    imports: Imports
    declarations: dict[str, list[str]]  # struct name -> its field lines

    @property
    def package(self) -> str:
        return "v" + self.snapshot.revision.replace("-", "_")

    @property
    def title(self) -> str:
        version = f" {self.snapshot.version}" if self.snapshot.version else ""
        return f"{self.snapshot.name}{version}"

    @property
    def header(self) -> str:
        return docstring(f"Typed bindings for the MCP server {self.title}.") or ""


def build(snapshot: Snapshot, facade: str | None = None) -> BindingModule:
    scope = naming.Scope(naming.MODULE_RESERVED, classes=True)
    facade_name = scope.claim(facade or naming.pascal(snapshot.name))
    if facade is not None and facade_name != facade:
        raise GenerationError(f"class name {facade!r} is reserved by the generated module")
    registry = Registry(scope)
    methods_scope = naming.Scope(naming.FACADE_RESERVED)
    imports = Imports()
    methods = [_tool(tool, registry, methods_scope, imports) for tool in snapshot.tools]
    methods += [_prompt(p, registry, methods_scope, imports) for p in snapshot.prompts]
    methods += [_template(t, methods_scope) for t in snapshot.resource_templates]
    declarations = {s.name: _declarations(s, imports) for s in registry.structs.values()}
    return BindingModule(
        snapshot=snapshot,
        facade=facade_name,
        structs=list(registry.structs.values()),
        methods=methods,
        imports=imports,
        declarations=declarations,
    )


# ---------------------------------------------------------------- tools


def _tool(
    tool: dict[str, Any], registry: Registry, methods: naming.Scope, imports: Imports
) -> Method:
    wire = str(tool["name"])
    owner = naming.pascal(wire)
    method_name = methods.claim(naming.snake(wire))
    input_schema = tool.get("inputSchema", {"type": "object"})
    reader = Reader(registry, input_schema, owner)
    input_name = registry.scope.claim(f"{owner}Input")
    input_type, notes = reader.collect(lambda: reader.root(input_name))
    parameters: list[Parameter] = []
    method_notes: list[str] = []
    if isinstance(input_type, Named) and input_name in registry.structs:
        struct = registry.structs[input_name]
        struct.notes += notes
        if not struct.description:
            struct.description = f"The arguments of the tool `{wire}`."
        ordered = [f for f in struct.wire_fields if f.value is None] + [
            f for f in struct.wire_fields if f.value is not None
        ]
        parameters = [Parameter(f.name, f.annotation(imports), f.value) for f in ordered]
        arguments = f"{input_name}({', '.join(f'{f.name}={f.name}' for f in ordered)})"
    elif input_type == MapT(Scalar("str"), AnyT()):
        arguments = "{}"  # an object without properties: no parameters
    else:
        parameters = [Parameter("arguments", input_type.render(imports), None)]
        arguments = "arguments"
        method_notes += notes
    execution = tool.get("execution")
    task = isinstance(execution, dict) and execution.get("taskSupport") == "required"
    options = ", ".join(f"{name}={name}" for name, _, _ in _OPTIONS)
    task_arg = ", task=True" if task else ""
    output_schema = tool.get("outputSchema")
    typed_local = False
    if isinstance(output_schema, dict):
        output_reader = Reader(registry, output_schema, owner)
        output_name = registry.scope.claim(f"{owner}Output")
        output_type, output_notes = output_reader.collect(lambda: output_reader.root(output_name))
        returns = output_type.render(imports)
        if isinstance(output_type, Named) and output_name in registry.structs:
            output_struct = registry.structs[output_name]
            output_struct.notes += output_notes
            if not output_struct.description:
                output_struct.description = f"The structured result of the tool `{wire}`."
            call = f"self._call_tool({wire!r}, {arguments}, {returns}{task_arg}, {options})"
        else:
            typed_local = True
            method_notes += output_notes
            call = f"self._call_tool_as({wire!r}, {arguments}, {returns}{task_arg}, {options})"
    else:
        returns = "protocol.CallToolResult"
        call = (
            f"self._call_tool_result({wire!r}, {arguments}, protocol.CallToolResult"
            f"{task_arg}, {options})"
        )
    description = tool.get("description") or tool.get("title")
    if task:
        description = (
            f"{description or ''}\n\nThe server runs this tool as a task: the call creates "
            "the task and returns once it is done."
        ).strip()
    return Method(
        name=method_name,
        kind="tool",
        wire_name=wire,
        description=description,
        parameters=_with_options(parameters, _OPTIONS),
        returns=returns,
        call=call,
        typed_local=typed_local,
        notes=method_notes,
    )


def _with_options(
    parameters: list[Parameter], options: tuple[tuple[str, str, str], ...]
) -> list[Parameter]:
    return parameters + [
        Parameter(name, annotation, default) for name, annotation, default in options
    ]


# ---------------------------------------------------------------- prompts


def _prompt(
    prompt: dict[str, Any], registry: Registry, methods: naming.Scope, imports: Imports
) -> Method:
    wire = str(prompt["name"])
    method_name = methods.claim(f"prompt_{naming.snake(wire)}")
    arguments = [a for a in prompt.get("arguments") or [] if isinstance(a, dict) and "name" in a]
    parameters: list[Parameter] = []
    passed = "None"
    if arguments:
        struct_name = registry.scope.claim(f"{naming.pascal(wire)}PromptArguments")
        fields = naming.Scope(naming.FIELD_RESERVED)
        struct = Struct(struct_name, f"The arguments of the prompt `{wire}`.")
        for argument in arguments:
            struct.fields.append(
                Field(
                    wire_name=str(argument["name"]),
                    name=fields.claim(naming.snake(str(argument["name"]))),
                    type=Scalar("str"),
                    required=argument.get("required") is True,
                    description=argument.get("description"),
                )
            )
        registry.structs[struct_name] = struct
        ordered = [f for f in struct.fields if f.required] + [
            f for f in struct.fields if not f.required
        ]
        parameters = [Parameter(f.name, f.annotation(imports), f.value) for f in ordered]
        passed = f"{struct_name}({', '.join(f'{f.name}={f.name}' for f in ordered)})"
    return Method(
        name=method_name,
        kind="prompt",
        wire_name=wire,
        description=prompt.get("description") or prompt.get("title"),
        parameters=_with_options(parameters, _OPTIONS[:1]),
        returns="protocol.GetPromptResult",
        call=f"self._get_prompt({wire!r}, {passed}, protocol.GetPromptResult, timeout=timeout)",
    )


# ---------------------------------------------------------------- resource templates

_EXPRESSION = re.compile(r"\{([^{}]*)\}")


def template_variables(uri_template: str) -> list[tuple[str, bool]]:
    """Each variable of an RFC 6570 template, and whether it is required (a
    variable of a query expression, ``{?x}`` or ``{&x}``, is optional)."""
    found: dict[str, bool] = {}
    for expression in _EXPRESSION.findall(uri_template):
        operator = expression[:1] if expression[:1] in "+#./;?&" else ""
        for spec in expression[len(operator) :].split(","):
            name = spec.rstrip("*").partition(":")[0]
            if name:
                found.setdefault(name, operator not in ("?", "&"))
    return list(found.items())


def _template(template: dict[str, Any], methods: naming.Scope) -> Method:
    uri_template = str(template["uriTemplate"])
    name = str(template.get("name") or uri_template)
    method_name = methods.claim(f"read_{naming.snake(name)}")
    scope = naming.Scope(naming.PARAMETER_RESERVED)
    variables = [
        (wire, scope.claim(naming.snake(wire)), req)
        for wire, req in template_variables(uri_template)
    ]
    ordered = [v for v in variables if v[2]] + [v for v in variables if not v[2]]
    parameters = [
        Parameter(py, "str" if required else "str | None", None if required else "None")
        for _, py, required in ordered
    ]
    mapping = ", ".join(f"{wire!r}: {py}" for wire, py, _ in variables)
    description = template.get("description") or template.get("title")
    description = f"{description or ''}\n\nReads `{uri_template}`.".strip()
    return Method(
        name=method_name,
        kind="resource template",
        wire_name=uri_template,
        description=description,
        parameters=_with_options(parameters, _OPTIONS[:1]),
        returns="protocol.ReadResourceResult",
        call=(
            f"self._read_resource({uri_template!r}, {{{mapping}}}, "
            "protocol.ReadResourceResult, timeout=timeout)"
        ),
    )


# ---------------------------------------------------------------- declarations


def _declarations(struct: Struct, imports: Imports) -> list[str]:
    lines = []
    for f in struct.wire_fields:
        for note in f.notes:
            lines.append(f"# looser: {note}")
        declaration = f"{f.name}: {f.annotation(imports)}"
        value = f.value
        if f.name != f.wire_name:
            args = [f"name={f.wire_name!r}"]
            if value is not None:
                args.append(f"default={value}")
            declaration += f" = msgspec.field({', '.join(args)})"
        elif value is not None:
            declaration += f" = {value}"
        lines.append(declaration)
        doc = docstring(f.description)
        if doc:
            lines.append(f'"""{doc}"""')
    return lines
