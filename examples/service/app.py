"""A FastAPI service that keeps many users' memories in ONE engramdb store: the "embedded in
another service" case. Each user is a namespace (a hard partition: a search never sees another
user's memories); the process opens the store once at startup and closes it at shutdown.

Routes (a user name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit;
anything else is a 422):

    POST /users/{user}/messages   {"session_id": "s1", "messages": [{"role": "user", "content": "..."}]}
    GET  /users/{user}/search?q=...&k=10
    GET  /users/{user}/context?q=...&max_tokens=1000&session_id=s1
    GET  /users/{user}/memories?limit=100&cursor=...   (oldest first; next_cursor is null on the last page)
    GET  /health

A request body over `max_body_bytes` (MAX_BODY_BYTES, 1 MiB, by default: a full batch of 1,000
messages of about a kilobyte each; `--max-body-bytes` to change it) is refused with a 413 and a
JSON `detail` naming the limit, before the service reads more of it than the limit and before the
store sees anything: an unbounded body would be held in memory whole, however large.

Run one process per store folder (a store has one writer; a second process gets StoreLocked):

    pip install fastapi uvicorn
    python examples/service/app.py --path ./service-memory --port 8000
    # or: ENGRAMDB_SERVICE_PATH=./service-memory uvicorn app:app --app-dir examples/service

Store calls never block the event loop: `engramdb.aio` runs them on the store's own small thread
pool, where searches run side by side (reads take no lock) and writes queue on the writer lock.
"""

import argparse
import contextlib
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import engramdb
import engramdb.aio
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette import types as asgi

# A subset of what the store accepts as a namespace that is also safe as one URL path segment.
USER_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
CURSOR = r"^[A-Za-z0-9_=-]{1,1024}$"  # what Store.list hands out (url-safe base64)

User = Annotated[str, PathParam(pattern=USER_NAME, description="the user: one namespace of the store")]
Text = Annotated[str, Query(min_length=1, max_length=10_000)]


MAX_BODY_BYTES = 1 << 20  # 1 MiB: see the module docstring


class BodyLimit:
    """ASGI middleware: a request whose body is over `limit` bytes gets a 413, whether it says so
    in Content-Length (refused before a byte of it is read) or streams it (refused once more than
    the limit has arrived). A body within the limit is read once and handed on as it was."""

    def __init__(self, app: asgi.ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self.refuse(send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await self.refuse(send)
                return
            if not message.get("more_body", False):
                break
        pending: list[asgi.Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> asgi.Message:
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)

    async def refuse(self, send: asgi.Send) -> None:
        body = JSONResponse(status_code=413, content={
            "detail": f"request body is over the service's limit of {self.limit:,} bytes; send fewer or "
                      "shorter messages per request"}).body
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


class Message(BaseModel):
    """One chat message to remember."""

    role: str = Field(min_length=1, max_length=100, examples=["user"])
    content: str = Field(min_length=1, examples=["My sister Maya runs a sourdough stall."])


class Messages(BaseModel):
    """A turn (or several) of one session, stored in order as one batch."""

    session_id: str | None = Field(default=None, min_length=1, max_length=256)
    messages: list[Message] = Field(min_length=1, max_length=1000)


def memory_json(m: engramdb.Memory) -> dict[str, Any]:
    """The fields a client needs of one memory."""
    return {"id": m.id, "content": m.content, "role": m.role, "session_id": m.session_id, "seq": m.seq,
            "memory_type": m.memory_type, "version": m.version,
            "learned_at": m.learned_at.isoformat() if m.learned_at else None,
            "valid_from": m.valid_from.isoformat() if m.valid_from else None,
            "valid_until": m.valid_until.isoformat() if m.valid_until else None}


class AsciiJSONResponse(JSONResponse):
    """JSON with every character past ASCII escaped: an error that quotes what a client sent (a
    lone surrogate, half an emoji, is valid JSON as an escape) is still a response, never a 500."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def create_app(path: str | Path, *, store_threads: int | None = None,
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The service over the store folder `path` (made on first start); `store_threads` sizes the
    store's thread pool (default: engramdb.aio's, up to 4); a request body over `max_body_bytes`
    gets a 413."""
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be an integer >= 1, got {max_body_bytes!r}")

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.store = await engramdb.aio.open(path, workers=store_threads)
        try:
            yield
        finally:
            await app.state.store.close()  # folds the WAL into a segment, saves the indexes

    app = FastAPI(title="engramdb multi-user memory service", lifespan=lifespan,
                  default_response_class=AsciiJSONResponse)
    app.add_middleware(BodyLimit, limit=max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return AsciiJSONResponse(status_code=422, content={"detail": jsonable_encoder(exc.errors())})

    @app.exception_handler(engramdb.InvalidMemory)
    async def invalid_memory(request: Request, exc: engramdb.InvalidMemory) -> JSONResponse:
        return AsciiJSONResponse(status_code=422, content={"detail": str(exc)})

    @app.exception_handler(engramdb.StoreError)
    async def store_error(request: Request, exc: engramdb.StoreError) -> JSONResponse:
        return AsciiJSONResponse(status_code=503, content={"detail": f"{type(exc).__name__}: {exc}"})

    def store_of(request: Request) -> engramdb.aio.AsyncStore:
        store: engramdb.aio.AsyncStore = request.app.state.store
        return store

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        """Liveness, with the store's memory and user counts."""
        stats = await store_of(request).stats()
        return {"ok": True, "memories": stats["memories"], "users": len(stats["namespaces"])}

    @app.post("/users/{user}/messages", status_code=201)
    async def add_messages(user: User, body: Messages, request: Request) -> dict[str, Any]:
        """Store a session's messages in order (one batch, one fsync); returns their ids."""
        messages = [m.model_dump() for m in body.messages]
        ids = await store_of(request).add_messages(messages, namespace=user, session_id=body.session_id)
        return {"ids": ids}

    @app.get("/users/{user}/search")
    async def search(user: User, q: Text, request: Request,
                     k: Annotated[int, Query(ge=1, le=100)] = 10) -> dict[str, Any]:
        """The user's best memories for `q` (hybrid: BM25 and the dense space on one [0, 1] scale)."""
        hits = await store_of(request).search(q, namespace=user, k=k)
        return {"hits": [{"score": h.score, **memory_json(h.memory)} for h in hits], "query_id": hits.query_id}

    @app.get("/users/{user}/context")
    async def context(user: User, q: Text, request: Request,
                      max_tokens: Annotated[int, Query(ge=50, le=100_000)] = 1000,
                      session_id: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
                      ) -> dict[str, Any]:
        """The block to put before the user's next prompt, under `max_tokens`."""
        ctx = await store_of(request).context(q, namespace=user, max_tokens=max_tokens, session_id=session_id)
        return {"text": ctx.text, "tokens": ctx.stats["tokens"], "tokenizer": ctx.stats["tokenizer"],
                "items": [{"id": it.id, "section": it.section, "score": it.score, "tokens": it.tokens}
                          for it in ctx.items]}

    @app.get("/users/{user}/memories")
    async def memories(user: User, request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                       cursor: Annotated[str | None, Query(pattern=CURSOR)] = None) -> dict[str, Any]:
        """One page of the user's current memories, oldest first; pass `next_cursor` back for the next."""
        try:
            page = await store_of(request).list(user, limit=limit, cursor=cursor)
        except ValueError as e:  # a cursor that list() never handed out
            raise HTTPException(422, str(e)) from None
        return {"items": [memory_json(m) for m in page], "next_cursor": page.next_cursor}

    return app


# `uvicorn app:app` serves the folder $ENGRAMDB_SERVICE_PATH (nothing is opened until startup).
app = create_app(os.environ.get("ENGRAMDB_SERVICE_PATH", "service-memory"))


def main(argv: list[str] | None = None) -> int:
    """Serve a store folder with uvicorn in this one process (the store's one writer)."""
    import uvicorn

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", default="service-memory", help="store folder (default ./service-memory)")
    ap.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--fd", type=int, help="serve on this already-bound socket instead (loadtest.py passes one)")
    ap.add_argument("--store-threads", type=int, help="the store's thread pool (default: up to 4)")
    ap.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES,
                    help=f"refuse request bodies over this many bytes with a 413 (default {MAX_BODY_BYTES:,})")
    ap.add_argument("--log-level", default="warning")
    args = ap.parse_args(argv)
    service = create_app(args.path, store_threads=args.store_threads, max_body_bytes=args.max_body_bytes)
    config = uvicorn.Config(service, host=args.host, port=args.port,
                            log_level=args.log_level, access_log=False)
    # An inherited socket is wrapped here with its real family (uvicorn's own --fd takes every fd for
    # AF_UNIX, so asyncio leaves TCP_NODELAY off and each response waits ~40 ms on delayed ACKs).
    sockets = [socket.socket(fileno=args.fd)] if args.fd is not None else None
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises Ctrl-C after its clean shutdown
        uvicorn.Server(config).run(sockets=sockets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
