"""``llm.http``: retries on 429 and 5xx with backoff honouring ``Retry-After``, no
retry on other 4xx, one client per process; over real loopback HTTP (``ChatServer``).

Waits are recorded by the policy's ``sleep`` (the test asserts what was waited for,
not how long the clock moved); one test sleeps for real, for a zero wait."""

from __future__ import annotations

import email.utils
import time

import pytest

from memdir.llm.chat import LLMError, OpenAIChat
from memdir.llm.http import RetryPolicy, retry_after, shared_client
from memdir.testing import ChatReply, ChatServer

HI = [{"role": "user", "content": "Hi?"}]


def recording(retries: int = 2, **options: float) -> tuple[RetryPolicy, list[float]]:
    waits: list[float] = []
    return RetryPolicy(retries=retries, sleep=waits.append, **options), waits


def test_429_twice_then_success() -> None:
    busy = ChatReply.error(429, "Rate limit reached for requests")
    with ChatServer([busy, busy, "Hello at last."]) as server:
        policy, waits = recording()
        assert OpenAIChat(server.base_url, "m", retry=policy).complete(HI) == "Hello at last."
    assert len(server.requests) == 3
    assert [r.body for r in server.requests] == [server.requests[0].body] * 3  # the same ask
    # no Retry-After: backoff from 0.5 s, doubling, up to a quarter off at random
    assert 0.375 <= waits[0] <= 0.5 and 0.75 <= waits[1] <= 1.0


def test_retry_after_is_honoured_in_seconds_milliseconds_and_as_a_date() -> None:
    soon = email.utils.formatdate(time.time() + 5, usegmt=True)
    replies = [
        ChatReply.error(429, "slow down", retry_after="3"),
        ChatReply(status=503, body={"error": "warming up"}, headers={"retry-after-ms": "1500"}),
        ChatReply.error(429, "slow down", retry_after=soon),
        "ok",
    ]
    with ChatServer(replies) as server:
        policy, waits = recording(retries=3)
        assert OpenAIChat(server.base_url, "m", retry=policy).complete(HI) == "ok"
    assert waits[:2] == [3.0, 1.5]
    assert 2.0 < waits[2] <= 5.0  # the date is whole seconds: up to one lost to rounding


def test_a_real_wait_of_zero_seconds() -> None:
    with ChatServer([ChatReply.error(503, "busy", retry_after="0"), "ok"]) as server:
        assert OpenAIChat(server.base_url, "m").complete(HI) == "ok"
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_is_retried(status: int) -> None:
    with ChatServer([ChatReply.error(status, "upstream trouble"), "fine"]) as server:
        policy, waits = recording()
        assert OpenAIChat(server.base_url, "m", retry=policy).complete(HI) == "fine"
    assert len(server.requests) == 2 and len(waits) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_is_not_retried(status: int) -> None:
    with ChatServer([ChatReply.error(status, "your request is wrong"), "unused"]) as server:
        policy, waits = recording()
        with pytest.raises(LLMError, match=f"HTTP {status}: your request is wrong"):
            OpenAIChat(server.base_url, "m", retry=policy).complete(HI)
    assert len(server.requests) == 1 and waits == []


def test_giving_up_names_the_attempts_and_what_the_server_said() -> None:
    busy = ChatReply.error(503, "overloaded")
    with ChatServer([busy, busy, busy, "too late"]) as server:
        policy, waits = recording()
        with pytest.raises(LLMError, match=r"HTTP 503: overloaded \(3 attempts\)$"):
            OpenAIChat(server.base_url, "m", retry=policy).complete(HI)
    assert len(server.requests) == 3 and len(waits) == 2


def test_a_retry_after_longer_than_memdir_waits_is_not_waited_for() -> None:
    with ChatServer([ChatReply.error(429, "quota", retry_after="3600"), "unused"]) as server:
        policy, waits = recording(max_wait_seconds=30)
        with pytest.raises(LLMError, match="asks to retry after 3600 s"):
            OpenAIChat(server.base_url, "m", retry=policy).complete(HI)
    assert len(server.requests) == 1 and waits == []


def test_no_retries_when_the_policy_says_none() -> None:
    with ChatServer([ChatReply.error(429, "busy"), "unused"]) as server:
        policy, waits = recording(retries=0)
        with pytest.raises(LLMError, match=r"HTTP 429: busy \(1 attempts\)"):
            OpenAIChat(server.base_url, "m", retry=policy).complete(HI)
    assert len(server.requests) == 1


def test_one_client_per_process_and_its_connection_is_kept() -> None:
    assert shared_client() is shared_client()
    with ChatServer(["one", "two"]) as server:
        first, second = OpenAIChat(server.base_url, "a"), OpenAIChat(server.base_url, "b")
        assert [first.complete(HI), second.complete(HI)] == ["one", "two"]
    [one, two] = server.requests
    assert one.peer == two.peer  # the second request came over the first's connection


def test_the_manifest_sets_the_retries(tmp_path: object) -> None:
    import memdir
    from memdir.config import LLMSettings
    from memdir.llm.chat import load_llm

    root = tmp_path / "mem"  # type: ignore[operator]
    memdir.init(root)
    manifest = memdir.load_manifest(root / "memdir.toml")
    settings = LLMSettings.model_validate(
        {"base_url": "http://127.0.0.1:1/v1", "model": "m", "max_retries": 5}
    )
    chat = load_llm(manifest.model_copy(update={"llm": settings}), {})
    assert isinstance(chat, OpenAIChat) and chat.retry.retries == 5


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # in the past: now
    ],
)
def test_retry_after_parsing(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after(headers) == expected
