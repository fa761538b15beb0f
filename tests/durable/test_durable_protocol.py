"""The sans-I/O core of sse_sansio.durable, called directly: no server, no socket.

Each expectation is read from PROTOCOL.md (the section is named), not from the code:
statuses, headers and bodies of every operation, the offsets' order, TTL and expiry on
the caller's clock, producers, closure, forks, JSON mode, long-poll and SSE decisions.
"""

from __future__ import annotations

import base64
import json
import random
from datetime import datetime, timezone

import pytest

from sse_sansio.durable import DurableStreams, LiveRead, MemoryStore, Request, Response

NOW = 1_800_000_000.0  # a wall-clock time (seconds since the Unix epoch)
START = "0000000000000000_0000000000000000"


def off(position: int) -> str:
    """Our offsets: position in 16 digits after a zero segment (the suite's start)."""
    return f"{0:016d}_{position:016d}"


def call(
    ds: DurableStreams,
    method: str,
    path: str = "/v1/stream/s",
    headers: dict[str, str] | None = None,
    query: str = "",
    body: bytes = b"",
    now: float = NOW,
) -> Response | LiveRead:
    request = Request(method, path, list((headers or {}).items()), query, body, "http://h")
    return ds.handle(request, now)


def ok(ds: DurableStreams, *args: object, **kwargs: object) -> Response:
    answer = call(ds, *args, **kwargs)  # type: ignore[arg-type]
    assert isinstance(answer, Response)
    return answer


def live(ds: DurableStreams, *args: object, **kwargs: object) -> LiveRead:
    answer = call(ds, *args, **kwargs)  # type: ignore[arg-type]
    assert isinstance(answer, LiveRead)
    return answer


def make(
    ds: DurableStreams,
    path: str = "/v1/stream/s",
    content_type: str = "text/plain",
    body: bytes = b"",
    **headers: str,
) -> Response:
    extra = {name.replace("_", "-"): value for name, value in headers.items()}
    response = ok(ds, "PUT", path, {"Content-Type": content_type, **extra}, body=body)
    assert response.status == 201, response.body
    return response


def post(ds: DurableStreams, body: bytes, path: str = "/v1/stream/s", **headers: str) -> Response:
    extra = {name.replace("_", "-"): value for name, value in headers.items()}
    extra.setdefault("Content-Type", "text/plain")
    return ok(ds, "POST", path, extra, body=body)


@pytest.fixture
def ds() -> DurableStreams:
    return DurableStreams(rng=random.Random(7))


# -- construction and the method table ----------------------------------------------------


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="long_poll_timeout"):
        DurableStreams(long_poll_timeout=0)
    with pytest.raises(ValueError, match="sse_lifetime"):
        DurableStreams(sse_lifetime=-1)
    with pytest.raises(ValueError, match="max_read_bytes"):
        DurableStreams(max_read_bytes=0)


def test_unknown_method_is_405_with_allow(ds: DurableStreams) -> None:
    response = ok(ds, "PATCH")
    assert response.status == 405
    assert "PUT" in (response.header("allow") or "")


def test_preflight_allows_the_protocol_headers(ds: DurableStreams) -> None:
    response = ok(ds, "OPTIONS")
    assert response.status == 204
    allowed = (response.header("access-control-allow-headers") or "").lower()
    for name in ("if-none-match", "producer-id", "stream-closed", "content-type"):
        assert name in allowed


def test_every_response_has_the_security_headers(ds: DurableStreams) -> None:
    for response in (ok(ds, "GET"), make(ds), ok(ds, "HEAD")):  # section 12.7
        assert response.header("x-content-type-options") == "nosniff"
        assert response.header("cross-origin-resource-policy") == "cross-origin"


# -- create (section 5.1) ----------------------------------------------------------------


def test_create_answers_201_with_location_type_and_tail(ds: DurableStreams) -> None:
    response = make(ds, body=b"hello")
    assert response.header("location") == "http://h/v1/stream/s"
    assert response.header("content-type") == "text/plain"
    assert response.header("stream-next-offset") == off(5)
    assert response.changed == "/v1/stream/s"


def test_create_defaults_to_octet_stream(ds: DurableStreams) -> None:
    assert ok(ds, "PUT").header("content-type") == "application/octet-stream"


def test_create_is_idempotent_for_the_same_configuration(ds: DurableStreams) -> None:
    make(ds, stream_ttl="60")
    again = ok(ds, "PUT", headers={"Content-Type": "text/plain", "Stream-TTL": "60"})
    assert again.status == 200
    assert again.header("location") is None
    assert again.header("stream-ttl") == "60"
    other = ok(ds, "PUT", headers={"Content-Type": "text/plain", "Stream-TTL": "61"})
    assert other.status == 409
    other_type = ok(ds, "PUT", headers={"Content-Type": "application/json"})
    assert other_type.status == 409


def test_create_compares_closure_status(ds: DurableStreams) -> None:
    make(ds)
    assert (
        ok(ds, "PUT", headers={"Content-Type": "text/plain", "Stream-Closed": "true"}).status == 409
    )
    make(ds, "/v1/stream/c", stream_closed="TRUE")
    closed_again = ok(
        ds, "PUT", "/v1/stream/c", {"Content-Type": "text/plain", "Stream-Closed": "true"}
    )
    assert closed_again.status == 200
    assert closed_again.header("stream-closed") == "true"
    assert ok(ds, "PUT", "/v1/stream/c", {"Content-Type": "text/plain"}).status == 409


def test_stream_closed_counts_only_when_true(ds: DurableStreams) -> None:
    response = make(ds, stream_closed="yes")  # section 4.1: any other value is absent
    assert response.header("stream-closed") is None


@pytest.mark.parametrize("ttl", ["+60", "060", "6.0", "6e1", "-1", "", "x"])
def test_bad_ttl_is_400(ds: DurableStreams, ttl: str) -> None:
    assert ok(ds, "PUT", headers={"Stream-TTL": ttl}).status == 400


@pytest.mark.parametrize(
    "value", ["tomorrow", "2030-01-01", "2030-01-01T00:00:00", "2030-13-01T00:00:00Z"]
)
def test_bad_expires_at_is_400(ds: DurableStreams, value: str) -> None:
    assert ok(ds, "PUT", headers={"Stream-Expires-At": value}).status == 400


def test_ttl_and_expires_at_together_are_400(ds: DurableStreams) -> None:
    headers = {"Stream-TTL": "5", "Stream-Expires-At": "2030-01-01T00:00:00Z"}
    assert ok(ds, "PUT", headers=headers).status == 400


def test_expires_at_forms_and_idempotency(ds: DurableStreams) -> None:
    make(ds, stream_expires_at="2030-01-01T00:00:00.5Z")
    head = ok(ds, "HEAD")
    assert head.header("stream-expires-at") == "2030-01-01T00:00:00.5Z"
    # The same instant written another way is the same configuration.
    same = {"Content-Type": "text/plain", "Stream-Expires-At": "2030-01-01 01:00:00.500+01:00"}
    assert ok(ds, "PUT", headers=same).status == 200
    lower = {"Content-Type": "text/plain", "Stream-Expires-At": "2030-01-01t00:00:00.500z"}
    assert ok(ds, "PUT", headers=lower).status == 200
    fraction = {"Stream-Expires-At": "2030-01-01T00:00:00.1234567890z"}
    assert ok(ds, "PUT", "/v1/stream/f", fraction).status == 201
    again = {"Stream-Expires-At": "2030-01-01T00:00:00.123456Z"}  # microseconds are kept
    assert ok(ds, "PUT", "/v1/stream/f", again).status == 200


def test_put_of_a_json_array_writes_its_messages(ds: DurableStreams) -> None:
    make(ds, content_type="application/json", body=b' [ {"a": 1} , [2] ] ')
    assert json.loads(ok(ds, "GET").body) == [{"a": 1}, [2]]
    make(ds, "/v1/stream/empty", content_type="application/json", body=b"[]")
    assert ok(ds, "GET", "/v1/stream/empty").body == b"[]"


# -- append (section 5.2) ----------------------------------------------------------------


def test_append_moves_the_tail(ds: DurableStreams) -> None:
    make(ds, body=b"ab")
    response = post(ds, b"cde")
    assert response.status == 204
    assert response.header("stream-next-offset") == off(5)
    assert response.changed == "/v1/stream/s"
    assert ok(ds, "GET").body == b"abcde"


def test_append_refusals(ds: DurableStreams) -> None:
    assert post(ds, b"x").status == 404
    make(ds)
    assert post(ds, b"").status == 400  # empty body without Stream-Closed
    assert ok(ds, "POST", body=b"x").status == 400  # no Content-Type
    assert post(ds, b"x", Content_Type="application/json").status == 409
    assert post(ds, b"x", Content_Type="Text/Plain; charset=utf-8").status == 204


def test_stream_seq_must_grow_bytewise(ds: DurableStreams) -> None:
    make(ds)
    assert post(ds, b"a", Stream_Seq="09").status == 204
    assert post(ds, b"b", Stream_Seq="10").status == 204
    assert post(ds, b"c", Stream_Seq="2").status == 204  # "2" > "10" as bytes
    assert post(ds, b"d", Stream_Seq="10").status == 409
    assert post(ds, b"e", Stream_Seq="2").status == 409


def test_close_and_append_after_close(ds: DurableStreams) -> None:
    make(ds, body=b"ab")
    closing = post(ds, b"c", Stream_Closed="true")
    assert (closing.status, closing.header("stream-closed")) == (204, "true")
    refused = post(ds, b"d")
    assert refused.status == 409  # section 5.2: closed
    assert refused.header("stream-closed") == "true"
    assert refused.header("stream-next-offset") == off(3)
    again = ok(ds, "POST", headers={"Stream-Closed": "true"})  # close-only: idempotent
    assert (again.status, again.header("stream-closed")) == (204, "true")
    # Closed first, even when the type differs too (section 5.2's precedence).
    assert post(ds, b"x", Content_Type="application/json").header("stream-closed") == "true"


def test_json_appends_flatten_one_level(ds: DurableStreams) -> None:
    make(ds, content_type="application/json")
    json_type = {"Content_Type": "application/json"}
    assert post(ds, b'{"event": "a"}', **json_type).status == 204
    assert post(ds, b"[[1,2],[3,4]]", **json_type).status == 204
    assert post(ds, b"[[[1]]]", **json_type).status == 204
    assert json.loads(ok(ds, "GET").body) == [{"event": "a"}, [1, 2], [3, 4], [[1]]]
    assert ok(ds, "GET").header("stream-next-offset") == off(4)  # one position a message


@pytest.mark.parametrize("body", [b"[]", b"{", b"NaN", b"[1,Infinity]", b"\xff"])
def test_bad_json_appends_are_400(ds: DurableStreams, body: bytes) -> None:
    make(ds, content_type="application/json")
    assert post(ds, body, Content_Type="application/json").status == 400


def test_json_append_to_a_closed_stream_is_409_before_parsing(ds: DurableStreams) -> None:
    make(ds, content_type="application/json", stream_closed="true")
    response = post(ds, b"not json", Content_Type="application/json")
    assert (response.status, response.header("stream-closed")) == (409, "true")


# -- idempotent producers (section 5.2.1) --------------------------------------------------


def produce(ds: DurableStreams, body: bytes, pid: str, epoch: int, seq: int, **kw: str) -> Response:
    return post(ds, body, Producer_Id=pid, Producer_Epoch=str(epoch), Producer_Seq=str(seq), **kw)


def test_producer_flow(ds: DurableStreams) -> None:
    make(ds)
    first = produce(ds, b"a", "p", 0, 0)
    assert (first.status, first.header("producer-epoch"), first.header("producer-seq")) == (
        200,
        "0",
        "0",
    )
    assert produce(ds, b"b", "p", 0, 1).status == 200
    duplicate = produce(ds, b"a", "p", 0, 0)
    assert (duplicate.status, duplicate.header("producer-seq")) == (204, "1")
    gap = produce(ds, b"z", "p", 0, 5)
    assert gap.status == 409
    assert (gap.header("producer-expected-seq"), gap.header("producer-received-seq")) == ("2", "5")
    assert produce(ds, b"c", "p", 1, 1).status == 400  # a new epoch starts at 0
    assert produce(ds, b"c", "p", 1, 0).status == 200
    stale = produce(ds, b"old", "p", 0, 2)
    assert (stale.status, stale.header("producer-epoch")) == (403, "1")
    assert produce(ds, b"q", "new", 0, 3).status == 400  # an unknown producer starts at 0
    assert ok(ds, "GET").body == b"abc"


@pytest.mark.parametrize(
    "headers",
    [
        {"Producer-Id": "p"},
        {"Producer-Id": "p", "Producer-Epoch": "0"},
        {"Producer-Id": "", "Producer-Epoch": "0", "Producer-Seq": "0"},
        {"Producer-Id": "p", "Producer-Epoch": "-1", "Producer-Seq": "0"},
        {"Producer-Id": "p", "Producer-Epoch": "0", "Producer-Seq": str(2**53)},
    ],
)
def test_bad_producer_headers_are_400(ds: DurableStreams, headers: dict[str, str]) -> None:
    make(ds)
    assert post(ds, b"x", **{k.replace("-", "_"): v for k, v in headers.items()}).status == 400


def test_producer_closing_append_is_deduplicated(ds: DurableStreams) -> None:
    make(ds)
    assert produce(ds, b"end", "p", 0, 0, Stream_Closed="true").status == 200
    retry = produce(ds, b"end", "p", 0, 0, Stream_Closed="true")
    assert (retry.status, retry.header("stream-closed")) == (204, "true")
    other = produce(ds, b"more", "p", 0, 1)
    assert (other.status, other.header("stream-closed")) == (409, "true")


def test_producer_close_only_is_204(ds: DurableStreams) -> None:
    make(ds)
    headers = {"Producer-Id": "p", "Producer-Epoch": "0", "Producer-Seq": "0"}
    response = ok(ds, "POST", headers={**headers, "Stream-Closed": "true"})
    assert (response.status, response.header("stream-closed")) == (204, "true")


# -- delete, HEAD (sections 5.4, 5.5) -------------------------------------------------------


def test_head_and_delete(ds: DurableStreams) -> None:
    assert ok(ds, "HEAD").status == 404
    assert ok(ds, "DELETE").status == 404
    make(ds, body=b"abc", stream_ttl="30")
    head = ok(ds, "HEAD")
    assert head.status == 200
    assert head.header("cache-control") == "no-store"
    assert head.header("stream-next-offset") == off(3)
    assert head.header("stream-ttl") == "30"
    assert head.body == b""
    deleted = ok(ds, "DELETE")
    assert (deleted.status, deleted.changed) == (204, "/v1/stream/s")
    assert ok(ds, "GET").status == 404


# -- catch-up reads (section 5.6, 8, 10) ----------------------------------------------------


def test_read_from_offsets(ds: DurableStreams) -> None:
    make(ds, body=b"first")
    middle = ok(ds, "GET").header("stream-next-offset")
    post(ds, b"second")
    assert ok(ds, "GET", query=f"offset={middle}").body == b"second"
    assert ok(ds, "GET", query="offset=-1").body == b"firstsecond"
    tail = ok(ds, "GET", query=f"offset={off(11)}")
    assert (tail.body, tail.header("stream-up-to-date")) == (b"", "true")


def test_offsets_sort_as_text_in_stream_order(ds: DurableStreams) -> None:
    make(ds)
    offsets = []
    for size in (1, 9, 90, 900):
        offsets.append(post(ds, b"x" * size).header("stream-next-offset") or "")
    assert offsets == sorted(offsets)
    assert len(set(offsets)) == len(offsets)
    assert "-1" not in offsets
    assert "now" not in offsets


@pytest.mark.parametrize(
    "offset",
    [
        "abc",
        "1",
        "0000000000000001_0000000000000000",
        "0000000000000000-0000000000000000",
        "000000000000000x_0000000000000000",
        "0000000000000000_000000000000000x",
        "0000000000000000_00000000000000001",
        "0000000000000000_000000000000000١",
        "0000000000000000_0000000000000099",
    ],
)
def test_bad_offsets_are_400(ds: DurableStreams, offset: str) -> None:
    make(ds, body=b"abc")
    assert ok(ds, "GET", query=f"offset={offset}").status == 400


def test_a_query_parameter_twice_is_400(ds: DurableStreams) -> None:
    make(ds)
    assert ok(ds, "GET", query="offset=-1&offset=-1").status == 400


def test_offset_now_catch_up(ds: DurableStreams) -> None:
    make(ds, body=b"old")
    response = ok(ds, "GET", query="offset=now")
    assert (response.status, response.body) == (200, b"")
    assert response.header("stream-next-offset") == off(3)
    assert response.header("stream-up-to-date") == "true"
    assert response.header("cache-control") == "no-store"
    assert response.header("etag") is None  # section 10.1: none for offset=now
    make(ds, "/v1/stream/j", "application/json", b"[1]", stream_closed="true")
    json_now = ok(ds, "GET", "/v1/stream/j", query="offset=now")
    assert (json_now.body, json_now.header("stream-closed")) == (b"[]", "true")


def test_etag_and_304(ds: DurableStreams) -> None:
    make(ds, body=b"data")
    first = ok(ds, "GET")
    etag = first.header("etag") or ""
    assert first.header("cache-control") == "public, max-age=60, stale-while-revalidate=300"
    not_modified = ok(ds, "GET", headers={"If-None-Match": f'"other", {etag}'})
    assert (not_modified.status, not_modified.body) == (304, b"")
    assert ok(ds, "GET", headers={"If-None-Match": '"other"'}).status == 200
    post(ds, b"", Stream_Closed="true")
    closed = ok(ds, "GET", headers={"If-None-Match": etag})  # the ETag varies with closure
    assert (closed.status, closed.header("stream-closed")) == (200, "true")
    assert closed.header("etag") != etag


def test_private_cache_control() -> None:
    ds = DurableStreams(public=False)
    make(ds, body=b"x")
    assert (ok(ds, "GET").header("cache-control") or "").startswith("private")


def test_reads_are_chunked() -> None:
    ds = DurableStreams(max_read_bytes=4)
    make(ds, body=b"0123456789")
    got, offset, rounds = b"", "-1", 0
    while True:
        response = ok(ds, "GET", query=f"offset={offset}")
        got += response.body
        offset = response.header("stream-next-offset") or ""
        rounds += 1
        if response.header("stream-up-to-date"):
            break
        assert len(response.body) == 4
    assert (got, rounds) == (b"0123456789", 3)


def test_json_reads_are_chunked_by_whole_messages() -> None:
    ds = DurableStreams(max_read_bytes=8)
    make(ds, content_type="application/json", body=b'["aaaa","bbbb","cccccccccccc"]')
    first = ok(ds, "GET")
    assert json.loads(first.body) == ["aaaa"]
    assert first.header("stream-up-to-date") is None
    second = ok(ds, "GET", query=f"offset={first.header('stream-next-offset')}")
    assert json.loads(second.body) == ["bbbb"]
    third = ok(ds, "GET", query=f"offset={second.header('stream-next-offset')}")
    assert json.loads(third.body) == ["cccccccccccc"]  # a message bigger than the bound


def test_closed_stream_catch_up_signals_eof(ds: DurableStreams) -> None:
    make(ds, body=b"all", stream_closed="true")
    response = ok(ds, "GET")
    assert response.header("stream-closed") == "true"
    eof = ok(ds, "GET", query=f"offset={response.header('stream-next-offset')}")
    assert (eof.body, eof.header("stream-closed"), eof.header("stream-up-to-date")) == (
        b"",
        "true",
        "true",
    )


# -- TTL and expiry on the caller's clock (section 5.1) ------------------------------------


def test_ttl_slides_on_reads_and_writes_not_on_head(ds: DurableStreams) -> None:
    make(ds, stream_ttl="10", body=b"x")
    assert ok(ds, "GET", now=NOW + 8).status == 200  # moves the expiry to NOW + 18
    written = ok(ds, "POST", headers={"Content-Type": "text/plain"}, body=b"y", now=NOW + 16)
    assert written.status == 204  # moves it to NOW + 26
    assert ok(ds, "HEAD", now=NOW + 25).status == 200  # does not move it
    assert ok(ds, "HEAD", now=NOW + 26).status == 404


def test_an_append_refused_still_slides_the_ttl(ds: DurableStreams) -> None:
    make(ds, stream_ttl="10", body=b"x")
    other = ok(ds, "POST", headers={"Content-Type": "a/b"}, body=b"y", now=NOW + 8)
    assert other.status == 409  # another type; the expiry moves to NOW + 18 all the same
    assert ok(ds, "HEAD", now=NOW + 17).status == 200
    assert ok(ds, "HEAD", now=NOW + 18).status == 404


def test_an_append_to_an_expired_stream_is_404_and_removes_it(ds: DurableStreams) -> None:
    make(ds, stream_ttl="10", body=b"x")
    late = ok(ds, "POST", headers={"Content-Type": "text/plain"}, body=b"y", now=NOW + 10)
    assert late.status == 404
    assert ds.store.meta("/v1/stream/s") is None  # removed, not only refused
    assert ok(ds, "PUT", headers={"Content-Type": "a/b"}, now=NOW + 10).status == 201


def test_the_method_may_come_in_any_case(ds: DurableStreams) -> None:
    make(ds)
    assert ok(ds, "post", headers={"Content-Type": "text/plain"}, body=b"ab").status == 204
    assert ok(ds, "get").body == b"ab"


def test_expires_at_is_absolute(ds: DurableStreams) -> None:
    at = datetime.fromtimestamp(NOW + 5, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    make(ds, stream_expires_at=at)
    assert ok(ds, "GET", now=NOW + 4.9).status == 200
    assert ok(ds, "GET", now=NOW + 5).status == 404
    assert ok(ds, "PUT", headers={"Content-Type": "text/plain"}, now=NOW + 6).status == 201


# -- long-poll (section 5.7) ----------------------------------------------------------------


def test_long_poll_decisions() -> None:
    ds = DurableStreams(long_poll_timeout=5, rng=random.Random(1))
    make(ds, body=b"ab")
    assert ok(ds, "GET", query="live=long-poll").status == 400  # the offset is required
    assert ok(ds, "GET", query="offset=-1&live=forever").status == 400
    with_data = ok(ds, "GET", query="offset=-1&live=long-poll")
    assert (with_data.status, with_data.body) == (200, b"ab")
    assert (with_data.header("stream-cursor") or "").isdigit()
    waiting = live(ds, "GET", query="offset=now&live=long-poll")
    assert (waiting.mode, waiting.position, waiting.deadline) == ("long-poll", 2, NOW + 5)
    assert ds.poll(waiting, NOW + 1) is None
    post(ds, b"c")
    woken = ds.poll(waiting, NOW + 2)
    assert woken is not None
    assert (woken.status, woken.body) == (200, b"c")
    again = live(ds, "GET", query=f"offset={off(3)}&live=long-poll")
    timed_out = ds.poll(again, NOW + 5)
    assert timed_out is not None
    assert timed_out.status == 204
    assert timed_out.header("stream-up-to-date") == "true"
    assert timed_out.header("stream-next-offset") == off(3)
    assert timed_out.header("stream-cursor") is not None


def test_long_poll_on_closed_and_deleted_streams(ds: DurableStreams) -> None:
    make(ds, body=b"ab")
    waiting = live(ds, "GET", query="offset=now&live=long-poll")
    post(ds, b"", Stream_Closed="true")
    closed = ds.poll(waiting, NOW)
    assert closed is not None
    assert (closed.status, closed.header("stream-closed")) == (204, "true")
    at_tail = ok(ds, "GET", query="offset=now&live=long-poll")  # no wait when closed
    assert (at_tail.status, at_tail.header("stream-closed")) == (204, "true")
    ok(ds, "DELETE")
    gone = ds.poll(waiting, NOW)
    assert gone is not None
    assert gone.status == 404


def test_cursor_never_goes_back() -> None:
    ds = DurableStreams(rng=random.Random(3))
    make(ds, body=b"x")
    plain = int(ok(ds, "GET", query="offset=-1&live=long-poll").header("stream-cursor") or 0)
    assert plain == int((NOW - 1728432000) // 20)  # section 10.1's interval count
    ahead = ok(ds, "GET", query=f"offset=-1&live=long-poll&cursor={plain}")
    assert int(ahead.header("stream-cursor") or 0) > plain
    behind = ok(ds, "GET", query="offset=-1&live=long-poll&cursor=5")
    assert behind.header("stream-cursor") == str(plain)
    junk = ok(ds, "GET", query="offset=-1&live=long-poll&cursor=abc")
    assert junk.header("stream-cursor") == str(plain)


# -- SSE (section 5.8) ----------------------------------------------------------------------


def parse(frames: list[bytes]) -> list[tuple[str, str, str | None]]:
    """(event, data, id) per frame, as an SSE parser reads them."""
    out = []
    for frame in frames:
        kind, data, event_id = "message", [], None
        for line in frame.decode().split("\n"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                kind = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
        out.append((kind, "\n".join(data), event_id))
    return out


def test_sse_text_stream_to_its_close() -> None:
    ds = DurableStreams(sse_lifetime=60)
    make(ds, body=b"line1\nline2")
    reading = live(ds, "GET", query="offset=-1&live=sse")
    assert dict(reading.headers)["content-type"] == "text/event-stream"
    frames, end = ds.sse_step(reading, NOW)
    events = parse(frames)
    assert end is None
    assert events[0][:2] == ("data", "line1\nline2")
    control = json.loads(events[1][1])
    assert control["streamNextOffset"] == off(11) == events[1][2]
    assert control["upToDate"] is True
    assert control["streamCursor"].isdigit()
    assert ds.sse_step(reading, NOW + 1) == ([], None)  # nothing new: nothing sent
    post(ds, b"end", Stream_Closed="true")
    frames, end = ds.sse_step(reading, NOW + 2)
    events = parse(frames)
    assert end == "closed"
    assert events[0][1] == "end"
    last = json.loads(events[1][1])
    assert last["streamClosed"] is True
    assert "streamCursor" not in last


def test_sse_first_step_sends_a_control_event_without_data(ds: DurableStreams) -> None:
    make(ds, body=b"old")
    reading = live(ds, "GET", query="offset=now&live=sse")
    frames, end = ds.sse_step(reading, NOW)
    (event,) = parse(frames)
    assert event[0] == "control"
    assert end is None
    assert json.loads(event[1]) == {
        "streamNextOffset": off(3),
        "streamCursor": json.loads(event[1])["streamCursor"],
        "upToDate": True,
    }


def test_sse_on_a_closed_stream_at_its_tail_ends_at_once(ds: DurableStreams) -> None:
    make(ds, stream_closed="true")
    reading = live(ds, "GET", query="offset=now&live=sse")
    frames, end = ds.sse_step(reading, NOW)
    assert end == "closed"
    assert json.loads(parse(frames)[0][1]) == {
        "streamNextOffset": off(0),
        "streamClosed": True,
        "upToDate": True,
    }


def test_sse_binary_streams_go_as_base64(ds: DurableStreams) -> None:
    make(ds, content_type="application/octet-stream", body=bytes(range(256)))
    reading = live(ds, "GET", query="offset=-1&live=sse")
    assert dict(reading.headers)["stream-sse-data-encoding"] == "base64"
    frames, _ = ds.sse_step(reading, NOW)
    assert base64.b64decode(parse(frames)[0][1]) == bytes(range(256))


def test_sse_json_streams_send_arrays(ds: DurableStreams) -> None:
    make(ds, content_type="application/json", body=b'[{"k":"v"},{"k":"w"}]')
    reading = live(ds, "GET", query="offset=-1&live=sse")
    assert "stream-sse-data-encoding" not in dict(reading.headers)
    frames, _ = ds.sse_step(reading, NOW)
    assert json.loads(parse(frames)[0][1]) == [{"k": "v"}, {"k": "w"}]


def test_sse_ends_at_its_lifetime_and_when_deleted() -> None:
    ds = DurableStreams(sse_lifetime=60)
    make(ds)
    reading = live(ds, "GET", query="offset=-1&live=sse")
    assert ds.sse_step(reading, NOW)[1] is None
    assert ds.sse_step(reading, NOW + 60)[1] == "lifetime"
    ok(ds, "DELETE")
    assert ds.sse_step(reading, NOW + 61) == ([], "gone")


def test_sse_resumes_from_last_event_id(ds: DurableStreams) -> None:
    make(ds, body=b"abc")
    reading = live(ds, "GET", headers={"Last-Event-ID": off(2)}, query="offset=-1&live=sse")
    frames, _ = ds.sse_step(reading, NOW)
    assert parse(frames)[0][1] == "c"


def test_sse_text_with_carriage_returns_keeps_each_line(ds: DurableStreams) -> None:
    make(ds, body=b"a\r\nb\rc")
    reading = live(ds, "GET", query="offset=-1&live=sse")
    frames, _ = ds.sse_step(reading, NOW)
    assert parse(frames)[0][1] == "a\nb\nc"


# -- forks (section 4.2) ----------------------------------------------------------------------


def fork(ds: DurableStreams, path: str, source: str, **headers: str) -> Response:
    extra = {name.replace("_", "-"): value for name, value in headers.items()}
    return ok(ds, "PUT", path, {"Stream-Forked-From": source, **extra})


def test_fork_reads_stitch_source_and_own_data(ds: DurableStreams) -> None:
    make(ds, "/v1/stream/src", body=b"hello")
    post(ds, b" world", "/v1/stream/src")
    created = fork(ds, "/v1/stream/f", "/v1/stream/src", Stream_Fork_Offset=off(5))
    assert created.status == 201
    assert created.header("content-type") == "text/plain"  # inherited
    assert created.header("stream-next-offset") == off(5)
    post(ds, b"!", "/v1/stream/f")
    assert ok(ds, "GET", "/v1/stream/f").body == b"hello!"
    assert ok(ds, "GET", "/v1/stream/src").body == b"hello world"
    again = fork(ds, "/v1/stream/f", "/v1/stream/src", Stream_Fork_Offset=off(5))
    assert again.status == 200
    other = fork(ds, "/v1/stream/f", "/v1/stream/src", Stream_Fork_Offset=off(4))
    assert other.status == 409


def test_fork_defaults_to_the_source_tail_and_a_fork_of_a_fork(ds: DurableStreams) -> None:
    make(ds, "/v1/stream/a", body=b"12")
    post(ds, b"34", "/v1/stream/a")
    assert fork(ds, "/v1/stream/b", "/v1/stream/a").header("stream-next-offset") == off(4)
    post(ds, b"56", "/v1/stream/b")
    # Sub-offsets count bytes past the anchor, up to the end of that append.
    c = fork(
        ds, "/v1/stream/c", "/v1/stream/b", Stream_Fork_Offset=off(2), Stream_Fork_Sub_Offset="1"
    )
    assert c.status == 201
    assert ok(ds, "GET", "/v1/stream/c").body == b"123"
    over = fork(
        ds, "/v1/stream/d", "/v1/stream/b", Stream_Fork_Offset=off(2), Stream_Fork_Sub_Offset="3"
    )
    assert over.status == 400
    inside = fork(
        ds, "/v1/stream/e", "/v1/stream/b", Stream_Fork_Offset=off(4), Stream_Fork_Sub_Offset="2"
    )
    assert ok(ds, "GET", "/v1/stream/e").body == b"123456"
    assert inside.status == 201


def test_fork_json_sub_offset_counts_messages(ds: DurableStreams) -> None:
    make(ds, "/v1/stream/j", "application/json", b"[1,2,3,4]")
    forked = fork(
        ds, "/v1/stream/k", "/v1/stream/j", Stream_Fork_Offset=START, Stream_Fork_Sub_Offset="2"
    )
    assert forked.status == 201
    post(ds, b"[9]", "/v1/stream/k", Content_Type="application/json")
    assert json.loads(ok(ds, "GET", "/v1/stream/k").body) == [1, 2, 9]


def test_fork_refusals(ds: DurableStreams) -> None:
    assert fork(ds, "/v1/stream/f", "/v1/stream/none").status == 404
    make(ds, "/v1/stream/src", body=b"hi")
    assert ok(ds, "PUT", "/v1/stream/x", {"Stream-Fork-Offset": START}).status == 400
    assert ok(ds, "PUT", "/v1/stream/x", {"Stream-Fork-Sub-Offset": "0"}).status == 400
    mismatch = ok(
        ds, "PUT", "/v1/stream/f", {"Stream-Forked-From": "/v1/stream/src", "Content-Type": "a/b"}
    )
    assert mismatch.status == 409
    assert fork(ds, "/v1/stream/f", "/v1/stream/src", Stream_Fork_Offset=off(3)).status == 400
    assert fork(ds, "/v1/stream/f", "/v1/stream/src", Stream_Fork_Offset="zz").status == 400
    for bad in ("-1", "abc", "1.5", "05", "+1"):
        assert fork(ds, "/v1/stream/f", "/v1/stream/src", Stream_Fork_Sub_Offset=bad).status == 400


def test_fork_ttl_follows_the_table(ds: DurableStreams) -> None:
    make(ds, "/v1/stream/ttl", stream_ttl="100")
    inherited = fork(ds, "/v1/stream/f1", "/v1/stream/ttl")
    assert inherited.header("stream-ttl") == "100"
    own = fork(ds, "/v1/stream/f2", "/v1/stream/ttl", Stream_TTL="5")
    assert own.header("stream-ttl") == "5"
    make(ds, "/v1/stream/abs", stream_expires_at="2030-01-01T00:00:00Z")
    kept = fork(ds, "/v1/stream/f3", "/v1/stream/abs")
    assert kept.header("stream-expires-at") == "2030-01-01T00:00:00Z"
    assert ok(ds, "HEAD", "/v1/stream/f3", now=1893456000.0).status == 404


def test_soft_delete_keeps_data_for_forks(ds: DurableStreams) -> None:
    make(ds, "/v1/stream/src", body=b"base")
    fork(ds, "/v1/stream/f", "/v1/stream/src")
    assert ok(ds, "DELETE", "/v1/stream/src").status == 204
    for method in ("GET", "HEAD", "POST", "DELETE"):
        assert (
            ok(ds, method, "/v1/stream/src", {"Content-Type": "text/plain"}, body=b"x").status
            == 410
        )
    assert ok(ds, "PUT", "/v1/stream/src").status == 409  # the path is not reused
    assert fork(ds, "/v1/stream/g", "/v1/stream/src").status == 409
    assert ok(ds, "GET", "/v1/stream/f").body == b"base"
    waiting = live(ds, "GET", "/v1/stream/f", query="offset=now&live=long-poll")
    assert ok(ds, "DELETE", "/v1/stream/f").status == 204
    assert ok(ds, "GET", "/v1/stream/src").status == 404  # the cascade removed it
    gone = ds.poll(waiting, NOW)
    assert gone is not None
    assert gone.status == 404
    # A soft-deleted source expires no further (its data is kept for its forks).
    make(ds, "/v1/stream/t", stream_ttl="1", body=b"t")
    fork(ds, "/v1/stream/tf", "/v1/stream/t", Stream_TTL="100")
    assert ok(ds, "GET", "/v1/stream/t", now=NOW + 2).status == 410
    assert ok(ds, "GET", "/v1/stream/tf", now=NOW + 2).body == b"t"
    poll_gone = live(ds, "GET", "/v1/stream/tf", query="offset=now&live=long-poll", now=NOW + 2)
    ok(ds, "DELETE", "/v1/stream/tf", now=NOW + 2)
    assert ds.sse_step(LiveRead("sse", "/v1/stream/t", 0, NOW + 9, None), NOW + 3)[1] == "gone"
    assert poll_gone.path == "/v1/stream/tf"


def test_create_race_falls_back_to_the_existing_stream() -> None:
    class Racy(MemoryStore):
        """A store where another writer creates the stream first."""

        def create(self, meta, units):  # type: ignore[no-untyped-def]
            super().create(meta, units)
            return self.meta(meta.path)

    ds = DurableStreams(Racy())
    assert ok(ds, "PUT", headers={"Content-Type": "text/plain"}).status == 200


def test_sse_chunks_are_not_up_to_date_until_the_tail() -> None:
    ds = DurableStreams(max_read_bytes=2)
    make(ds, body=b"abcde")
    reading = live(ds, "GET", query="offset=-1&live=sse")
    frames, end = ds.sse_step(reading, NOW)
    steps = 1
    while reading.behind:  # one data event a step: the caller asks again at once
        more, end = ds.sse_step(reading, NOW + 60)  # past the lifetime: not while behind
        frames += more
        steps += 1
    assert (steps, end) == (3, "lifetime")
    events = parse(frames)
    datas = [data for kind, data, _ in events if kind == "data"]
    controls = [json.loads(data) for kind, data, _ in events if kind == "control"]
    assert datas == ["ab", "cd", "e"]
    assert [control.get("upToDate") for control in controls] == [None, None, True]
    assert [control["streamNextOffset"] for control in controls] == [off(2), off(4), off(5)]


def test_fork_with_the_source_content_type_given(ds: DurableStreams) -> None:
    make(ds, "/v1/stream/src", "text/plain; charset=utf-8", b"x")
    headers = {"Stream-Forked-From": "/v1/stream/src", "Content-Type": "text/plain"}
    assert ok(ds, "PUT", "/v1/stream/f", headers).status == 201


def test_sse_close_without_data_sends_the_closed_signal(ds: DurableStreams) -> None:
    make(ds, body=b"x")
    reading = live(ds, "GET", query="offset=-1&live=sse")
    ds.sse_step(reading, NOW)
    ok(ds, "POST", headers={"Stream-Closed": "true"})
    frames, end = ds.sse_step(reading, NOW)
    assert end == "closed"
    (event,) = parse(frames)
    assert json.loads(event[1]) == {
        "streamNextOffset": off(1),
        "streamClosed": True,
        "upToDate": True,
    }
