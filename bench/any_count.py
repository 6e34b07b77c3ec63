"""``python -m bench.any_count``: how many annotations of the application layer are ``Any``.

Counts, over ``runtime/mcpbind/app/*.py``, every annotation node (a
parameter's, a return's, an annotated assignment's) that is or contains the
name ``Any`` (``Any``, ``typing.Any``, ``dict[str, Any]``, ``"list[Any]"`` ...),
and prints the total, then the count per module, largest first; also how
many of them are ``Any`` itself (not ``dict[str, Any]`` ...).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "runtime" / "mcpbind" / "app"


def annotation_nodes(tree: ast.AST) -> Iterator[ast.expr]:
    """Every annotation node of a module: arguments, returns, annotated assignments."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def mentions_any(annotation: ast.expr) -> bool:
    """Whether an annotation is or contains ``Any`` (also inside a string annotation)."""
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Any":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                inner = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                continue
            if mentions_any(inner):
                return True
    return False


def is_any(annotation: ast.expr) -> bool:
    """Whether an annotation is ``Any`` itself."""
    return (isinstance(annotation, ast.Name) and annotation.id == "Any") or (
        isinstance(annotation, ast.Attribute) and annotation.attr == "Any"
    )


def count(path: Path) -> tuple[int, int]:
    """(annotations that are or contain Any, annotations that are Any) of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = [annotation for annotation in annotation_nodes(tree) if mentions_any(annotation)]
    return len(found), sum(1 for annotation in found if is_any(annotation))


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else APP
    counts = {path.name: count(path) for path in sorted(folder.glob("*.py"))}
    print(f"total {sum(n for n, _ in counts.values())}")
    print(f"of which Any itself {sum(exact for _, exact in counts.values())}")
    for name, (n, exact) in sorted(counts.items(), key=lambda item: (-item[1][0], item[0])):
        if n:
            print(f"{n:5d}  {name} ({exact} Any itself)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
