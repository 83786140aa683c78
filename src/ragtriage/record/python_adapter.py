"""Python retrievers: a function (sync or async), a LangChain retriever, a LlamaIndex retriever.

``python:my_pkg.search:retrieve`` (or ``python:path/to/file.py:retrieve``) names the object. What it is decides
how it is called, by its interface and never by importing LangChain or LlamaIndex (they stay optional):

- a LlamaIndex retriever has ``aretrieve``/``retrieve`` and returns ``NodeWithScore`` objects;
- a LangChain retriever has ``ainvoke``/``invoke`` (or the older ``get_relevant_documents``) and returns
  Documents whose ``metadata`` holds the ids;
- anything else callable gets the request fields its signature names (``query``, ``k``, ``candidate_k``,
  ``principal``, ``filters``, ``case_id``; all of them with ``**kwargs``; a first unnamed parameter gets the
  query) and may return hits, ``{"final": [...], "candidates": [...]}`` or an awaitable of either.

A synchronous call runs on its own daemon thread, so one that hangs is abandoned at ``--timeout`` and never
holds the recorder (or its exit) hostage.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragtriage.record.hits import ResponseShape, show
from ragtriage.record.types import RecordError, Request, Response, RetrieverError
from ragtriage.safe_text import visible

FIELDS = ("query", "k", "candidate_k", "principal", "filters", "case_id")
EXTRAS = {"langchain": "langchain", "llama_index": "llamaindex"}


def load_target(spec: str) -> Any:
    """Import ``module:attr`` or ``file.py:attr`` (``attr`` may be dotted); failures are a :class:`RecordError`."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise RecordError(f"python:{spec}: name the object as python:module:function or python:file.py:function")
    try:
        module = _import(module_name)
    except RecordError:
        raise
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        hint = next((f"; pip install 'ragtriage[{extra}]'" for m, extra in EXTRAS.items() if m in missing), "")
        raise RecordError(f"cannot import {module_name}: {exc}{hint}") from None
    except Exception as exc:
        raise RecordError(f"importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise RecordError(f"{module_name} has no attribute {attr!r}")
    return obj


def _import(name: str) -> Any:
    if name.endswith(".py") or "/" in name or "\\" in name:
        path = Path(name).resolve()
        if not path.is_file():
            raise RecordError(f"python:{name}: no such file")
        # Like running the file as a script: its folder is importable, so its sibling modules are found.
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        loaded = sys.modules.get(path.stem)
        if loaded is not None and getattr(loaded, "__file__", None) == str(path):
            return loaded
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path:
        sys.path.insert(0, "")
    return importlib.import_module(name)


def interface_of(obj: Any) -> str:
    if hasattr(obj, "aretrieve") or (hasattr(obj, "retrieve") and not hasattr(obj, "invoke")):
        return "llamaindex"
    if hasattr(obj, "ainvoke") or hasattr(obj, "invoke") or hasattr(obj, "get_relevant_documents"):
        return "langchain"
    if callable(obj):
        return "callable"
    raise RecordError(f"{type(obj).__name__} is neither callable nor a LangChain/LlamaIndex retriever")


def _binder(fn: Callable[..., Any]) -> Callable[[Request], tuple[tuple[Any, ...], dict[str, Any]]]:
    """How a request becomes arguments for ``fn``, decided once from its signature."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return lambda r: ((r.query,), {})
    if any(p.kind is p.VAR_KEYWORD for p in params):
        named = set(FIELDS)
    else:
        named = {p.name for p in params if p.name in FIELDS and p.kind is not p.POSITIONAL_ONLY}
    free = [p for p in params if p.name not in named and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    first_gets_query = bool(free) and "query" not in named
    required = [p.name for p in free[1 if first_gets_query else 0 :] if p.default is p.empty]
    if required:
        raise RecordError(
            f"{getattr(fn, '__name__', fn)!r} needs argument(s) {', '.join(required)} the recorder cannot give; "
            f"it passes {', '.join(FIELDS)} by name"
        )

    def bind(r: Request) -> tuple[tuple[Any, ...], dict[str, Any]]:
        kwargs = {n: getattr(r, n) for n in FIELDS if n in named}
        return ((r.query,) if first_gets_query else ()), kwargs

    return bind


async def _in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on a daemon thread; an abandoned (timed-out) call cannot block the process from exiting."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> None:
        try:
            value, error = fn(), None
        except BaseException as exc:
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed while this call hung
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, daemon=True, name="ragtriage-record-call").start()
    return await future


class PythonRetriever:
    def __init__(self, target: str, shape: ResponseShape, obj: Any | None = None) -> None:
        self.target = target
        self.shape = shape
        self.obj = load_target(target) if obj is None else obj
        self.interface = interface_of(self.obj)
        self.is_async = False
        if self.interface == "llamaindex":
            self.is_async = hasattr(self.obj, "aretrieve")
            fn = self.obj.aretrieve if self.is_async else self.obj.retrieve
            self.call: Callable[[Request], Any] = lambda r: fn(r.query)
        elif self.interface == "langchain":
            self.is_async = hasattr(self.obj, "ainvoke")
            fn = getattr(self.obj, "ainvoke", None) or getattr(self.obj, "invoke", None)
            fn = fn or self.obj.get_relevant_documents
            self.call = lambda r: fn(r.query)
        else:
            fn = self.obj
            self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
                getattr(fn, "__call__", None)  # noqa: B004  (an object whose __call__ is async)
            )
            bind = _binder(fn)

            def call(r: Request) -> Any:
                args, kwargs = bind(r)
                return fn(*args, **kwargs)

            self.call = call

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "python",
            "target": self.target,
            "interface": self.interface,
            "async": self.is_async,
            "response": self.shape.describe(),
        }

    async def aclose(self) -> None:
        return None

    async def fetch(self, request: Request) -> Any:
        try:
            if self.is_async:
                raw = await self.call(request)
            else:
                raw = await _in_thread(lambda: self.call(request))
            if inspect.isawaitable(raw):
                raw = await raw
        except (asyncio.CancelledError, RetrieverError):
            raise
        except Exception as exc:
            raise RetrieverError(f"{type(exc).__name__}: {exc}") from None
        return raw

    async def retrieve(self, request: Request) -> Response:
        return self.shape.read(await self.fetch(request))

    async def first(self, request: Request) -> Response:
        try:
            raw = await self.fetch(request)
        except RetrieverError as exc:
            raise RecordError(f"python:{self.target}: the first call failed: {visible(exc)}") from None
        if raw is None:
            raise RecordError(f"python:{self.target}: the first call returned None:\n{show(raw)}")
        return self.shape.check_first(raw)
