"""A catalog formula in words, for definitions a person reads: "gross_profit / revenue *
100" → "gross profit ÷ revenue, in percent". Digits are spelled out, so a definition shows
no figure the validator would have to ground."""

from __future__ import annotations

import ast
import re

from shared.metric_catalog import METRICS_BY_ID, mid_sentence

_NUMBER_WORDS = {
    "1": "one",
    "2": "two",
    "3": "three",
    "4": "four",
    "5": "five",
    "10": "ten",
    "12": "twelve",
    "100": "a hundred",
    "365": "three hundred and sixty-five",
}
_DIGITS = re.compile(r"\b\d+\b")
_OPERATORS = {ast.Div: "÷", ast.Mult: "×", ast.Add: "+", ast.Sub: "−", ast.Pow: "to the power"}


def in_words(text: str) -> str:
    """Small numbers spelled out ("the 5 fiscal years" → "the five fiscal years")."""
    return _DIGITS.sub(lambda m: _NUMBER_WORDS.get(m.group(0), m.group(0)), text)


def _label(name: str) -> str:
    metric = METRICS_BY_ID.get(name)
    return mid_sentence(metric.label) if metric is not None else name.replace("_", " ")


def _render(node: ast.expr, top: bool = False) -> str:
    if isinstance(node, ast.Name):
        return _label(node.id)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.UnaryOp)
        and isinstance(node.slice.operand, ast.Constant)
    ):
        years = int(node.slice.operand.value)
        when = (
            "the previous year's"
            if years == 1
            else f"{_NUMBER_WORDS.get(str(years))} years earlier"
        )
        return (
            f"{when} {_label(node.value.id)}" if years == 1 else f"{_label(node.value.id)} {when}"
        )
    if isinstance(node, ast.Constant):
        return _NUMBER_WORDS.get(str(node.value), str(node.value))
    if isinstance(node, ast.BinOp):
        # "× 100" at the top is the unit, not arithmetic a reader needs.
        if (
            top
            and isinstance(node.op, ast.Mult)
            and isinstance(node.right, ast.Constant)
            and node.right.value == 100
        ):
            return f"{_render(node.left, top=True)}, in percent"
        if isinstance(node.op, ast.Pow):
            return f"{_render(node.left)} to the power {_render(node.right)}"
        text = f"{_render(node.left)} {_OPERATORS.get(type(node.op), '?')} {_render(node.right)}"
        return text if top else f"({text})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"minus {_render(node.operand)}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "opt":
        # opt(x): a term that counts as zero when not reported; a reader needs only x.
        return ", ".join(_render(arg) for arg in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = {"avg": "the average", "abs": "the absolute value"}.get(node.func.id, node.func.id)
        return f"{name} of " + ", ".join(_render(arg) for arg in node.args)
    return ast.unparse(node)


def formula_in_words(formula: str) -> str:
    """ "gross_profit / revenue * 100" → "gross profit ÷ revenue, in percent"."""
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError:
        return in_words(formula.replace("_", " "))
    return in_words(_render(tree.body, top=True))
