"""Lines of code of an implementation file, counted with tokenize.

A line is a logical line (one statement, however many physical lines it wraps over); comments,
blank lines and docstrings do not count. A multi-line string literal (a C++ kernel source) counts
each non-blank line it spans. Kernel lines are those inside functions whose decorator marks a
device kernel (`@*.kernel`, `@*.func`, `@cuda.jit`, `@triton.jit`) and module-level multi-line
string constants, or such constants joined with `+` (kernel sources); everything else is host code.
"""
from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

KERNEL_DECORATOR_TAILS = {"kernel", "func"}
KERNEL_DECORATORS = {"cuda.jit", "triton.jit", "numba.cuda.jit"}
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENCODING, tokenize.ENDMARKER}


@dataclass(frozen=True)
class Loc:
    total: int
    kernel: int

    @property
    def host(self) -> int:
        return self.total - self.kernel


def count_file(path: str | Path) -> Loc:
    return count_source(Path(path).read_text())


def count_implementation(path: str | Path, variant: str = "") -> Loc:
    """An implementation file plus the backend-private modules (`_name.py` beside it) it imports at
    its top level: helpers shared by a backend's files count once in each file that uses them. A
    variant with a module of its own (`_<problem>_<variant>.py`, to which the file only hands the
    build) counts as that module and its own private imports."""
    path = Path(path)
    own = variant_modules(path, (variant,) if variant else ())
    path = own[0] if own else path
    total = count_file(path)
    for helper in private_imports(path):
        extra = count_file(helper)
        total = Loc(total.total + extra.total, total.kernel + extra.kernel)
    return total


def private_imports(path: Path, found: list[Path] | None = None) -> list[Path]:
    """Backend-private modules imported at the top of `path`, and those they import in turn, each
    once: `from backends.x._name import ...` or `from backends.x import _name`."""
    found = [] if found is None else found
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            last = node.module.rsplit(".", 1)[-1]
            names = [last] if last.startswith("_") else [a.name for a in node.names if a.name.startswith("_")]
            for name in names:
                candidate = path.parent / f"{name}.py"
                if candidate.is_file() and candidate not in found and candidate != path:
                    found.append(candidate)
                    private_imports(candidate, found)
    return found


def variant_modules(path: Path, variants) -> list[Path]:
    """The variants' own modules beside `path` (`_gemm_cutlass.py` for gemm.py's variant "cutlass")."""
    return [f for f in (path.parent / f"_{path.stem}_{v}.py" for v in variants) if f.is_file()]


def count_source(source: str) -> Loc:
    tree = ast.parse(source)
    docstrings = _docstring_lines(tree)
    kernel_spans = _kernel_spans(tree)
    total = kernel = 0
    line: list[tokenize.TokenInfo] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in SKIP:
            line.append(tok)
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) and line:
            start = line[0].start[0]
            if start not in docstrings:
                weight = 1 + sum(_extra_string_lines(t) for t in line if t.type == tokenize.STRING)
                total += weight
                if any(a <= start <= b for a, b in kernel_spans):
                    kernel += weight
            line = []
    return Loc(total, kernel)


def _extra_string_lines(tok: tokenize.TokenInfo) -> int:
    """Non-blank lines after the first (which the statement counts), quote-only lines excluded."""
    return sum(1 for s in tok.string.splitlines()[1:] if s.strip().strip("\"'"))


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.add(body[0].lineno)
    return lines


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _is_kernel_decorator(dec: ast.AST) -> bool:
    name = _dotted(dec)
    return name.rsplit(".", 1)[-1] in KERNEL_DECORATOR_TAILS or name in KERNEL_DECORATORS


def _kernel_spans(tree: ast.Module) -> list[tuple[int, int]]:
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any(_is_kernel_decorator(d) for d in node.decorator_list):
            spans.append((min(d.lineno for d in node.decorator_list), node.end_lineno))
    for node in tree.body:
        if isinstance(node, ast.Assign) and _source_text(node.value) and node.end_lineno > node.lineno:
            spans.append((node.lineno, node.end_lineno))
    return spans


def _source_text(node: ast.AST) -> bool:
    """A string literal, or string literals joined with `+` to named parts (a kernel source that
    includes a helper module's source text)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [node.left, node.right]
        return all(_source_text(x) or isinstance(x, ast.Name) for x in parts) and \
            any(_source_text(x) for x in parts)
    return False
