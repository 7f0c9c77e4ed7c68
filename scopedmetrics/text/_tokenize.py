"""SacreBLEU's tokenizers that need nothing downloaded: ``none``, ``13a``, ``char`` and ``intl``.

``13a`` is the tokenization of the mteval-v13a script that SacreBLEU made the
default: unescape a few HTML entities, split off punctuation and symbols,
split off periods and commas except inside numbers, and a dash after a digit.
``intl`` (mteval-v14's international tokenization) needs Unicode property
classes, so it needs the ``regex`` package; the others need nothing.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

AVAILABLE = ("none", "13a", "char", "intl")

_ENTITIES = (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))

# mteval-v13a's rules, in its order. The first class is every ASCII symbol except the
# period, comma and dash (those follow their own rules): { | } ~  [ \ ] ^ _ `  space ! " # $ % &
# ( ) * +  : ; < = > ? @  /
_13A = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # a period or comma not after a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # ... or not before one
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # a dash after a digit
)


def _none(line: str) -> str:
    return line


def _13a(line: str) -> str:
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, char in _ENTITIES:
            line = line.replace(entity, char)
    line = f" {line} "
    for pattern, repl in _13A:
        line = pattern.sub(repl, line)
    return line


def _char(line: str) -> str:
    return " ".join(line)


def _intl() -> Callable[[str], str]:
    regex = importlib.import_module("regex")  # a dependency of this tokenizer only (it has no type stubs)

    rules = (
        (regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),  # punctuation not after a digit
        (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),  # ... or not before one
        (regex.compile(r"(\p{S})"), r" \1 "),  # every symbol
    )

    def tokenize(line: str) -> str:
        for pattern, repl in rules:
            line = pattern.sub(repl, line)
        return line

    return tokenize


def tokenizer(name: str) -> Callable[[str], list[str]]:
    """The function from a line to its tokens for SacreBLEU's tokenizer ``name``."""
    base = _intl() if name == "intl" else {"none": _none, "13a": _13a, "char": _char}[name]
    return lambda line: base(line).split()


def available(name: str) -> bool:
    """Whether tokenizer ``name`` can run here (``intl`` needs the ``regex`` package)."""
    if name != "intl":
        return name in AVAILABLE
    try:
        importlib.import_module("regex")
    except ImportError:
        return False
    return True
