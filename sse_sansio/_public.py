# Public identities: each public face names the classes and functions it exports.
#
# A class or function records where it was defined in ``__module__``, and pickle,
# copy, repr() and tracebacks show that path.  Here it would be a private room of the
# house (``sse_sansio._client._feeding``), so a pickle made today would break on the
# next move of a module, and a traceback would send the reader to a path they must not
# import.  So each face (sse_sansio, sse_sansio.llm, sse_sansio.testing,
# sse_sansio.stores) ends by calling publish(), which gives every class and function of
# its ``__all__`` the face as ``__module__`` (and the exported name as ``__name__`` and
# ``__qualname__``), as httpx and trio do in their package faces.
#
# Invariants, for every name N published by face F:
# - ``getattr(import_module(obj.__module__), obj.__qualname__) is obj``, so pickle finds
#   the object by its public path;
# - an object another face or the standard library already names publicly keeps its
#   name (a re-export does not move it);
# - constants, sentinel instances and typing aliases are left as they are: they have
#   no ``__module__`` of their own to set (NEED_DATA pickles through its class, NeedData).

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping

__all__ = ["is_private_path", "publish"]


def is_private_path(dotted: str) -> bool:
    """True when a dotted path has a segment that starts with ``_`` and is no dunder."""
    return any(
        part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
        for part in dotted.split(".")
    )


def publish(namespace: Mapping[str, object], names: Iterable[str], face: str) -> None:
    """Name each exported class and function of ``namespace`` by its public path.

    Args:
        namespace: The face's globals.
        names: The face's ``__all__``.
        face: The face's module name (``__name__``).
    """
    for name in names:
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # a constant, a sentinel, a typing alias
        if not is_private_path(obj.__module__) and obj.__module__ != face:
            continue  # already public elsewhere
        obj.__module__ = face
        obj.__name__ = obj.__qualname__ = name
