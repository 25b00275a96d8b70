"""The part of an implementation file that is its kernel, for slides: found in the file's syntax tree,
nothing marked by hand.

- a function or class decorated as a kernel or JIT function (`@triton.jit`, `@cute.kernel`, `@ct.kernel`,
  `@T.prim_func`, `@cuda.jit`, `@wp.kernel`, ...), and a function that defines one inside (a factory);
- a function handed by name to a compiler (`helion.kernel(fn)`, `pl.pallas_call(fn)`, `plgpu.kernel(fn)`);
- CUDA C++ in a string (a constant holding `__global__`), shown as C++;
- else, a file with no kernel of its own (a library call, an operator API): its functions but the
  harness's hooks (`supports`, `export`, `specs`)."""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass

KERNEL_DECORATOR = re.compile(r"\b(jit|kernel|prim_func)\b")
COMPILER_CALL = re.compile(r"^(kernel|pallas_call|jit)$")
HOOKS = {"supports", "export", "specs"}


@dataclass(frozen=True)
class Span:
    """Lines first..last of the file (1-based, inclusive), in `language` ("python" or "cuda")."""
    first: int
    last: int
    language: str = "python"


def _decorated_as_kernel(node) -> bool:
    return any(KERNEL_DECORATOR.search(ast.unparse(d)) for d in getattr(node, "decorator_list", ()))


def _defines_kernel(node) -> bool:
    return any(_decorated_as_kernel(n) for n in ast.walk(node) if n is not node)


def _compiled_names(tree) -> set[str]:
    """Names of functions handed to a compiler call anywhere in the file."""
    aliases = defaultdict(set)              # kernel = functools.partial(fn, ...), then compiler(kernel)
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            aliases[n.targets[0].id].add(_function_named(n.value))
    names = set()
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        if COMPILER_CALL.match(callee) and call.args:
            name = _function_named(call.args[0])
            names |= aliases.get(name) or {name}
    return names - {None}


def _function_named(arg) -> str | None:
    """`fn` of `fn` or of `functools.partial(fn, ...)`."""
    if isinstance(arg, ast.Call) and ast.unparse(arg.func).endswith("partial") and arg.args:
        arg = arg.args[0]
    return arg.id if isinstance(arg, ast.Name) else None


def _first_line(node) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def _cuda_string(node) -> Span | None:
    """A module constant whose string holds CUDA C++ (`__global__`), also where a call edits the
    string (`.replace(...)` on it): the string's lines inside the quotes."""
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    for c in ast.walk(value) if value is not None else ():
        if isinstance(c, ast.Constant) and isinstance(c.value, str) and "__global__" in c.value:
            return Span(c.lineno + 1, c.end_lineno - 1, "cuda")
    return None


def spans(source: str) -> list[Span]:
    """The kernel's spans of `source`, in file order."""
    tree = ast.parse(source)
    compiled = _compiled_names(tree)
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (
                _decorated_as_kernel(node) or _defines_kernel(node) or node.name in compiled):
            found.append(Span(_first_line(node), node.end_lineno))
        elif (span := _cuda_string(node)) is not None:
            found.append(span)
    if not found:           # no kernel of its own: what the user writes around the library call
        found = [Span(_first_line(n), n.end_lineno) for n in tree.body
                 if isinstance(n, ast.FunctionDef) and n.name not in HOOKS]
    return found


def _docstring_lines(source: str) -> set[int]:
    """The lines of every function's and class's docstring (prose, not kernel)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            found |= set(range(body[0].lineno, body[0].end_lineno + 1))
    return found


def excerpt(source: str) -> tuple[list[tuple[str, str]], int]:
    """The kernel's lines as (language, line) pairs without docstrings, spans apart separated by an
    empty line, and how many lines the whole file has."""
    lines, prose = source.splitlines(), _docstring_lines(source)
    out: list[tuple[str, str]] = []
    for span in spans(source):
        if out:
            out.append(("python", ""))
        out += [(span.language, lines[k - 1]) for k in range(span.first, span.last + 1) if k not in prose]
    return out, len(lines)
