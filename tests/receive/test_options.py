"""The checkers' one definition of Connection's options agrees with both cores.

sse_sansio/_receive/_options.py declares the options twice over for type checkers:
ClassicOptions (the opt-in options only at their defaults: a Connection[Never]) and
OptInOptions (every value: a Connection[OptInItem]).  Every entry point's overloads
reuse them, so they are checked here against the runtime, on each core: the same
keywords as its Connection, each default admitted as classic, and each opt-in value the
core accepts admitted only by OptInOptions and making the connection hand out an
OptInItem.  (tests/package/test_typing_options.py runs the checkers themselves.)
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest

from sse_sansio import (
    NEED_DATA,
    DataPiece,
    Diagnostic,
    EndOfStream,
    PiecedEvent,
    SkippedEvent,
    Update,
)
from sse_sansio._receive._options import ClassicOptions, OptInOptions

OPT_IN_ITEMS = (SkippedEvent, DataPiece, PiecedEvent, Diagnostic, Update)
CLASSIC = get_type_hints(ClassicOptions)
OPT_IN = get_type_hints(OptInOptions)

# Each opt-in option at a value other than its default, with a stream on which that
# value makes the connection hand out an item a default connection never does.
OPTED_IN: dict[str, tuple[object, dict[str, Any], bytes, type[object]]] = {
    "on_oversize": ("skip", {"max_event_size": 8}, b"data: far too long\n\n", SkippedEvent),
    "piece_size": (4, {}, b"data: abcdefgh\n\n", DataPiece),
    "diagnostics": (True, {}, b"colour: red\ndata: x\n\n", Diagnostic),
    "updates": (True, {}, b"id: 5\nretry: 2000\n\ndata: x\n\n", Update),
}


def admits(hint: object, value: object) -> bool:
    """Whether a checker takes ``value`` for ``hint`` (the few forms the options use)."""
    if hint is type(None):
        return value is None
    if get_origin(hint) is Literal:
        return any(type(value) is type(arg) and value == arg for arg in get_args(hint))
    if get_origin(hint) in (Union, types.UnionType):
        return any(admits(arg, value) for arg in get_args(hint))
    assert isinstance(hint, type), hint
    return isinstance(value, hint)


def keywords(conn_cls: type[object]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(conn_cls).parameters)


def items(conn: Any, data: bytes) -> list[object]:
    conn.receive_data(data)
    conn.receive_data(b"")
    got = []
    while not isinstance(item := conn.next_event(), EndOfStream):
        assert item is not NEED_DATA
        got.append(item)
    return got


def test_the_options_are_the_keywords_of_each_core(conn_cls: type[object]) -> None:
    params = keywords(conn_cls)
    assert {param.kind for param in params.values()} == {inspect.Parameter.KEYWORD_ONLY}
    assert set(CLASSIC) == set(OPT_IN) == set(params)
    assert ClassicOptions.__required_keys__ == OptInOptions.__required_keys__ == set()


def test_every_default_is_classic(conn_cls: type[object]) -> None:
    for name, param in keywords(conn_cls).items():
        assert admits(CLASSIC[name], param.default), name
        assert admits(OPT_IN[name], param.default), name


def test_the_opt_in_options_are_those_the_two_declare_apart() -> None:
    assert {name for name in CLASSIC if CLASSIC[name] != OPT_IN[name]} == set(OPTED_IN)


@pytest.mark.parametrize("name", sorted(OPTED_IN))
def test_an_opt_in_value_is_not_classic_and_brings_its_items(
    conn_cls: type[object], name: str
) -> None:
    value, others, data, kind = OPTED_IN[name]
    assert not admits(CLASSIC[name], value)
    assert admits(OPT_IN[name], value)
    opted = items(conn_cls(**{name: value}, **others), data)
    assert any(isinstance(item, kind) for item in opted), opted
    # The same stream on a connection with every default: only classic items.
    assert not any(isinstance(item, OPT_IN_ITEMS) for item in items(conn_cls(), data))
