"""Refuse, at input, values that cannot be stored or printed safely: lone surrogates, NUL,
over-deep nesting, over-long strings and keys, over-long lists (400 listing each problem)."""

from __future__ import annotations

from dataclasses import dataclass

from common.errors import ValidationFailed
from common.status import Message, validation_message

MAX_PROBLEMS = 20


@dataclass(frozen=True)
class InputLimits:
    """The shape a request value may have; `[api]` options set them per service."""

    max_depth: int = 32
    max_string: int = 65536
    max_key: int = 256
    max_items: int = 10000


DEFAULT_LIMITS = InputLimits()


def _string_problem(text: str, limit: int) -> str | None:
    if len(text) > limit:
        return f"is {len(text)} characters long, over the limit of {limit}"
    if "\x00" in text:
        return "contains a NUL character"
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        return "contains a lone surrogate (not valid Unicode)"
    return None


def _where(path: tuple[str | int, ...]) -> str:
    return "/" + "/".join(str(p)[:40] for p in path) if path else "(root)"


def find_problems(value: object, limits: InputLimits = DEFAULT_LIMITS) -> list[str]:
    """Every problem of `value` (a parsed JSON/YAML value), each naming where it is; without
    recursion, so no depth of input can overflow the stack."""
    problems: list[str] = []
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while stack and len(problems) < MAX_PROBLEMS:
        item, path = stack.pop()
        if len(path) > limits.max_depth:
            problems.append(f"{_where(path[:limits.max_depth])}: nested deeper than "
                            f"{limits.max_depth} levels")
            continue
        if isinstance(item, str):
            bad = _string_problem(item, limits.max_string)
            if bad:
                problems.append(f"{_where(path)}: string {bad}")
        elif isinstance(item, dict):
            if len(item) > limits.max_items:
                problems.append(f"{_where(path)}: {len(item)} keys, over the limit of "
                                f"{limits.max_items}")
                continue
            for key, sub in item.items():
                key_text = str(key)
                bad = _string_problem(key_text, limits.max_key)
                if bad:
                    problems.append(f"{_where(path)}: key {key_text[:40]!r} {bad}")
                    continue
                stack.append((sub, (*path, key_text)))
        elif isinstance(item, list):
            if len(item) > limits.max_items:
                problems.append(f"{_where(path)}: {len(item)} items, over the limit of "
                                f"{limits.max_items}")
                continue
            stack.extend((sub, (*path, i)) for i, sub in enumerate(item))
    return problems


def problem_messages(problems: list[str], what: str = "body") -> list[Message]:
    return [validation_message(f"{what} {p}", name="UnsafeInput", diagnostic=p.split(":")[0])
            for p in problems]


def require_safe(value: object, limits: InputLimits = DEFAULT_LIMITS, what: str = "body") -> None:
    """400 listing every problem of `value`; returns quietly when it is safe to keep."""
    problems = find_problems(value, limits)
    if problems:
        raise ValidationFailed(f"The {what} holds values that cannot be accepted",
                               messages=problem_messages(problems, what),
                               reason="UnsafeInput")
