"""Attribute docstrings: the string literal right under an annotated class attribute.

Python keeps no such docstring at runtime, so it is read from the class's source with `ast`, the way Pulumi's
schema analyzer reads the docstrings of component args (``pulumi.provider.experimental.analyzer``).
"""

import ast
import inspect
import textwrap
from functools import cache


@cache
def attribute_docs(cls: type, raw: bool = False) -> dict[str, str]:
    """``{attribute: docstring}`` for the annotated attributes of ``cls`` that have one (whitespace collapsed; as
    written with ``raw``, the form Pulumi's analyzer puts in the package schema)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    node = tree.body[0]
    if not isinstance(node, ast.ClassDef):  # pragma: no cover - getsource of a class starts with its def
        return {}
    docs: dict[str, str] = {}
    for stmt, following in zip(node.body, node.body[1:], strict=False):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            text = following.value.value
            docs[stmt.target.id] = text if raw else " ".join(text.split())
    return docs


def class_doc(cls: type) -> str:
    """The first paragraph of a class docstring, on one line."""
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())
