# Pickles of the public state machines (issue 32, item 4): a pickle names public paths
# only, or the object refuses to be pickled.
#
# Each public class with instances is one of three kinds, decided in its own module:
# - a value (an item, an error, a record): it pickles as itself (_events.py, _errors.py);
# - a state machine worth keeping (a Watchdog between two reads, a Tracker mid-stream, a
#   ReplayWindow over a MemoryStore): its pickle names its public class, through
#   ``copyreg.__newobj__`` (the NEWOBJ opcode from protocol 2), with its attributes as
#   the state.  An attribute that holds an object of a private room (a Clock, a
#   dialect's class, a NamedTuple of the llm layer) is replaced by plain data that the
#   class turns back into that object in ``__setstate__``: a later move of the private
#   class breaks no pickle.  Loading runs no ``__init__``, so it checks nothing again:
#   the state was checked when it was made.
# - a handle on something that means nothing elsewhere (a socket and its thread, a live
#   iterator of chunks, a Redis client): pickle and copy raise TypeError saying what to
#   keep instead, as a Connection does (_receive/_contract.py, NOT_COPYABLE).
#
# Invariants: public_reduce() names ``type(obj)`` and whatever the state holds, nothing
# else; attributes() reads ``__dict__`` and every ``__slots__`` of the class and its
# bases, and restore() writes them back with ``object.__setattr__``, so a class that
# gains ``__slots__`` (for speed) or is frozen pickles the same.

from __future__ import annotations

import copyreg
from typing import Any, NoReturn

from sse_sansio._clock import Clock

__all__ = ["attributes", "clock_state", "public_reduce", "refuse", "restore", "with_clock"]

_NOT_STATE = frozenset({"__dict__", "__weakref__"})


def attributes(obj: object) -> dict[str, Any]:
    """Every attribute set on ``obj``, from its ``__dict__`` and its classes' slots."""
    names = list(getattr(obj, "__dict__", ()))
    for cls in type(obj).__mro__:
        names.extend(cls.__dict__.get("__slots__", ()))
    kept = [name for name in names if name not in _NOT_STATE and hasattr(obj, name)]
    return {name: getattr(obj, name) for name in kept}


def restore(obj: object, state: dict[str, Any]) -> None:
    """Set each attribute of ``state`` on ``obj`` (the inverse of attributes())."""
    for name, value in state.items():
        object.__setattr__(obj, name, value)


def public_reduce(obj: object, **plain: Any) -> tuple[Any, ...]:
    """The reduce value that rebuilds ``obj`` through its own (public) class.

    ``plain`` replaces the attributes that hold private objects with plain data; the
    class's ``__setstate__`` turns them back.
    """
    newobj = copyreg.__newobj__  # type: ignore[attr-defined]  # (not in typeshed)
    return (newobj, (type(obj),), {**attributes(obj), **plain})


def refuse(obj: object, why: str) -> NoReturn:
    """Refuse to pickle or copy ``obj``: a TypeError naming its class and ``why``."""
    raise TypeError(f"a {type(obj).__name__} cannot be pickled or copied: {why}")


def clock_state(clock: Clock) -> tuple[str, float]:
    """A Clock as plain data: its owner's name and the latest time it saw."""
    return (clock.owner, clock.latest)


def with_clock(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` whose ``_clock``, saved by clock_state(), is a Clock again."""
    owner, latest = state["_clock"]
    return {**state, "_clock": Clock(owner, latest)}
