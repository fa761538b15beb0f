"""One contract for both cores: the option checks, the defaults and the refusals.

_contract.py writes them once; the pure core calls it, the compiled core reads it at
import.  Each test runs both cores in one pytest run (ids ``py`` and ``c``) and compares
what they raise with what the contract says, so that neither can drift.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest

from sse_sansio import RemoteProtocolError
from sse_sansio._receive import _contract
from tests.helpers.cores import CORE, PURE, needs_core

CORES = [
    pytest.param(PURE, id="py"),
    pytest.param(CORE.Connection if CORE else None, id="c", marks=needs_core),
]

MAX = "max_event_size must be a positive int or None, not "
PIECE = "piece_size must be None or an int from 1 to max_event_size, not "
BAD_OPTIONS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"errors": "ignore"}, ValueError, 'errors must be "strict" or "replace", not \'ignore\''),
    ({"errors": None}, ValueError, 'errors must be "strict" or "replace", not None'),
    ({"last_event_id": 7}, TypeError, "last_event_id must be str, not int"),
    ({"last_event_id": b"7"}, TypeError, "last_event_id must be str, not bytes"),
    ({"last_event_id": "a\0b"}, ValueError, "last_event_id may not contain NUL, CR or LF"),
    ({"last_event_id": "a\rb"}, ValueError, "last_event_id may not contain NUL, CR or LF"),
    ({"last_event_id": "a\nb"}, ValueError, "last_event_id may not contain NUL, CR or LF"),
    ({"max_event_size": 0}, ValueError, MAX + "0"),
    ({"max_event_size": -1}, ValueError, MAX + "-1"),
    ({"max_event_size": True}, ValueError, MAX + "True"),
    ({"max_event_size": 1.5}, ValueError, MAX + "1.5"),
    ({"max_event_size": "9"}, ValueError, MAX + "'9'"),
    ({"on_oversize": "drop"}, ValueError, 'on_oversize must be "error" or "skip", not \'drop\''),
    ({"piece_size": 0}, ValueError, PIECE + "0"),
    ({"piece_size": True}, ValueError, PIECE + "True"),
    ({"piece_size": 9, "max_event_size": 8}, ValueError, PIECE + "9"),
    # The first bad option in the contract's order is the one reported.
    (
        {"errors": "x", "last_event_id": 7},
        ValueError,
        'errors must be "strict" or "replace", not \'x\'',
    ),
    ({"max_event_size": 0, "on_oversize": "x"}, ValueError, MAX + "0"),
]


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize(("options", "error", "message"), BAD_OPTIONS)
def test_a_bad_option_gets_the_contracts_error(
    core: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        core(**options)
    assert type(raised.value) is error
    assert str(raised.value) == message


@pytest.mark.parametrize(("options", "error", "message"), BAD_OPTIONS)
def test_the_contract_itself_raises_them(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    full = {"errors": "strict", "last_event_id": "", "max_event_size": None}
    full |= {"on_oversize": "error", "piece_size": None} | options
    with pytest.raises(error, match="^" + message.replace("(", r"\(")):
        _contract.check_options(**full)


@pytest.mark.parametrize("core", CORES)
def test_the_default_limit_is_the_contracts(core: Any) -> None:
    limit = _contract.DEFAULT_MAX_EVENT_SIZE
    assert limit == 16 * 1024 * 1024
    assert inspect.signature(core).parameters["max_event_size"].default == limit
    conn = core()
    conn.receive_data(b"data: " + b"x" * limit)
    with pytest.raises(RemoteProtocolError) as raised:
        conn.next_event()
    assert str(raised.value) == (
        f"event exceeds max_event_size={limit} bytes at byte offset {limit}"
    )


@needs_core
def test_a_limit_past_any_offset_is_no_limit() -> None:
    assert CORE is not None
    conn = CORE.Connection(max_event_size=10**30)
    conn.receive_data(b"data: a\n\n")
    assert conn.next_event().data == "a"


# ------------------------------------------------------------------ copying (issue 26/14)


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("options", [{}, {"keep_raw": True}, {"piece_size": 4}])
@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
def test_a_connection_is_not_copied(core: Any, options: dict[str, Any], how: Any) -> None:
    conn = core(**options)
    conn.receive_data(b"data: a\n\n")
    with pytest.raises(TypeError) as raised:
        how(conn)
    assert str(raised.value) == _contract.NOT_COPYABLE
    assert conn.next_event().data == "a"  # the original is untouched
