"""Per-user notification channels and public score channels, served by several processes.

What it shows (issue 40, item 7): a FastAPI app whose hub serves many channels from one
log; a bearer token names a user; a client asks for channels (``?channel=`` repeated,
exact names and patterns) and ``may_read`` lets each user read only their own channel
(``user/<id>``) and the public ones (``scores/*``), live and on replay alike.  The log
is a Redis stream that stores each event's channel beside it: every process follows it
(``AsyncRedisStreamStore.follow_channels``) into a hub of its own, so a client resumes
on any process with its ``Last-Event-ID`` (or ``?last_event_id=`` after a page reload).
A publish goes to Redis, never to a process.  Needs ``sse_sansio[redis]``, FastAPI and
uvicorn.

Run a Redis server and two processes of the app, publish, and read with curl::

    redis-server --port 6379 --save "" --appendonly no
    uvicorn --app-dir examples channels:app --port 8001
    uvicorn --app-dir examples channels:app --port 8002
    curl -N -H "Authorization: Bearer ann" "http://127.0.0.1:8001/events?channel=user/ann&channel=scores/*"
    curl -X POST -H "Authorization: Bearer admin" http://127.0.0.1:8002/publish/user/ann -d hello

The bearer token here *is* the user's name (``admin`` may publish and revoke): a stand-in
for your own authentication.  Rights live in each process (revoke them on every process,
or keep them where your authentication does).  ``CHANNELS_REDIS_URL`` and ``CHANNELS_KEY``
choose the Redis server and the stream.
"""

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated

import redis.asyncio
from fastapi import FastAPI, Header, HTTPException, Query, Request

from sse_sansio import Comment, Event, Hub, ReplayWindow, StreamCut
from sse_sansio.asgi import HubResponse
from sse_sansio.stores import AsyncRedisStreamStore, MirrorStore

KEY = os.environ.get("CHANNELS_KEY", "sse_sansio:channels")
URL = os.environ.get("CHANNELS_REDIS_URL", "redis://127.0.0.1:6379/0")
REVOKED: set[tuple[str, str]] = set()  # (user, channel prefix) taken away at run time
Bearer = Annotated[str, Header(alias="Authorization")]
Channels = Annotated[list[str] | None, Query(alias="channel")]


def may_read_as(user: str) -> Callable[[str | None, Event | Comment], bool]:
    def may_read(channel: str | None, item: Event | Comment) -> bool:
        if channel is None or any(u == user and channel.startswith(p) for u, p in REVOKED):
            return False
        return channel == f"user/{user}" or channel.startswith("scores/")

    return may_read


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with redis.asyncio.Redis.from_url(URL) as client:  # 10,000 events kept, and mirrored
        app.state.store = store = AsyncRedisStreamStore(client, KEY, max_events=10_000)
        window = ReplayWindow(store=MirrorStore((await store.read(None)).token, max_events=10_000))
        app.state.hub = hub = Hub(max_buffer=256 * 1024, window=window, now=time.monotonic())
        follower = asyncio.ensure_future(follow(store, hub))
        yield
        follower.cancel()


async def follow(store: AsyncRedisStreamStore, hub: Hub) -> None:
    """Publish every event of the shared log, on its channel, to this process's hub."""
    while True:
        try:
            async for event, channel in store.follow_channels(block=1.0):
                hub.publish(event, time.monotonic(), channel=channel)
            return hub.close(time.monotonic())
        except StreamCut:  # the log was replaced (Redis restarted empty): readers resume
            hub.cut_subscribers(time.monotonic())


app = FastAPI(lifespan=lifespan)


def user_of(authorization: str) -> str:
    if not (user := authorization.removeprefix("Bearer ").strip()):
        raise HTTPException(401, "a bearer token, please")
    return user


@app.get("/events")
def events(request: Request, channel: Channels = None, authorization: Bearer = "") -> HubResponse:
    user = user_of(authorization)
    names = channel or [f"user/{user}", "scores/*"]
    return HubResponse(request.app.state.hub, channels=names, may_read=may_read_as(user))


@app.post("/publish/{channel:path}")
async def publish(channel: str, request: Request, authorization: Bearer = "") -> dict[str, int]:
    if user_of(authorization) != "admin":
        raise HTTPException(403, "only admin publishes")
    event = Event(data=(await request.body()).decode())
    return {"number": (await request.app.state.store.append(event, channel=channel))[1]}


@app.post("/revoke/{user}/{prefix:path}")
def revoke(user: str, prefix: str, authorization: Bearer = "") -> None:
    if user_of(authorization) != "admin":
        raise HTTPException(403, "only admin revokes")
    REVOKED.add((user, prefix))  # in this process: revoke on each, or keep rights elsewhere
