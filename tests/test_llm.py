"""The optional LLM: ``OpenAIChat`` over real loopback HTTP against ``ChatServer``,
``load_llm``'s config precedence, ``Memory.llm``, and the fakes themselves."""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path

import pytest

import memdir
from memdir.config import LLMSettings, Manifest
from memdir.llm.chat import ChatModel, LLMError, OpenAIChat, load_llm
from memdir.llm.http import RetryPolicy
from memdir.testing import ChatReply, ChatRequest, ChatServer, FakeChat

HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
KEY = "sk-test-" + "x7" * 10


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own LLM settings never leak into a test."""
    for name in ("MEMDIR_LLM_BASE_URL", "MEMDIR_LLM_MODEL", "MEMDIR_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def with_llm(manifest: Manifest, **settings: object) -> Manifest:
    return manifest.model_copy(update={"llm": LLMSettings.model_validate(settings)})


# -- the request ---------------------------------------------------------------------


def test_the_request_has_the_openai_shape() -> None:
    with ChatServer(["Hello there."]) as server:
        chat = OpenAIChat(server.base_url, "llama3.1:8b", api_key=KEY, temperature=0.2)
        assert chat.complete(HI, max_tokens=50) == "Hello there."
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.body == {
        "model": "llama3.1:8b",
        "messages": HI,
        "temperature": 0.2,
        "stream": False,
        "max_tokens": 50,
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert chat.id == f"llama3.1:8b@{server.base_url}"


def test_no_key_no_authorization_header_and_a_trailing_slash_is_fine() -> None:
    with ChatServer(["ok"]) as server:
        assert OpenAIChat(server.base_url + "/", "m").complete(HI) == "ok"
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].path == "/v1/chat/completions"
    assert "max_tokens" not in server.requests[0].body


def test_json_mode_asks_for_a_json_object() -> None:
    with ChatServer(['{"facts": []}']) as server:
        chat = OpenAIChat(server.base_url, "m")
        assert json.loads(chat.complete(HI, json_mode=True)) == {"facts": []}
    assert server.requests[0].body["response_format"] == {"type": "json_object"}


def test_a_400_to_json_mode_is_retried_once_without_it() -> None:
    def server_without_json_mode(request: ChatRequest) -> str | ChatReply:
        if request.json_mode:
            return ChatReply.error(400, "Unrecognized request argument: response_format")
        return '{"ok": true}'

    with ChatServer(server_without_json_mode) as server:
        chat = OpenAIChat(server.base_url, "m")
        assert chat.complete(HI, json_mode=True) == '{"ok": true}'
        assert [r.json_mode for r in server.requests] == [True, False]
        assert not chat.json_mode_supported
        assert chat.complete(HI, json_mode=True) == '{"ok": true}'  # not asked again
        assert [r.json_mode for r in server.requests] == [True, False, False]
    assert server.requests[0].body["messages"] == server.requests[1].body["messages"] == HI


def test_a_400_that_is_not_about_json_mode_is_an_error_after_the_one_retry() -> None:
    too_long = ChatReply.error(400, "This model's maximum context length is 8192 tokens")
    with ChatServer([too_long, too_long, too_long]) as server:
        chat = OpenAIChat(server.base_url, "m")
        with pytest.raises(LLMError, match="HTTP 400: This model's maximum context length"):
            chat.complete(HI, json_mode=True)
        assert len(server.requests) == 2 and chat.json_mode_supported
        with pytest.raises(LLMError, match="HTTP 400"):
            chat.complete(HI)  # without json_mode: no retry
        assert len(server.requests) == 3


# -- errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (ChatReply.error(401, "Incorrect API key provided"), "HTTP 401: Incorrect API key"),
        (ChatReply.error(404, "The model `gpt-9` does not exist"), "HTTP 404: The model `gpt-9`"),
        (ChatReply.error(429, "Rate limit reached"), "HTTP 429: Rate limit reached"),
        (ChatReply.error(500, "internal"), "HTTP 500: internal"),
        (ChatReply(status=404, body={"error": "model 'qwen' not found"}), "HTTP 404: model 'qwen'"),
        (ChatReply(status=422, body={"detail": [{"msg": "field required"}]}), "field required"),
        (ChatReply(status=502, body="<html>Bad Gateway</html>"), "HTTP 502: <html>Bad Gateway"),
        (ChatReply(status=503, body=""), r"HTTP 503: \(no message\)"),
    ],
)
def test_http_errors_carry_the_status_and_the_servers_words(
    reply: ChatReply, expected: str
) -> None:
    with ChatServer([reply]) as server, pytest.raises(LLMError, match=expected) as caught:
        OpenAIChat(server.base_url, "m", api_key=KEY).complete(HI)
    assert server.base_url in str(caught.value) and KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (ChatReply.malformed("<html>oops</html>"), "not JSON: '<html>oops</html>'"),
        (ChatReply(body=[1, 2]), "JSON that is not an object"),
        (ChatReply(body={"choices": []}), "no choices"),
        (ChatReply(body={"id": "x"}), "no choices"),
        (ChatReply(body={"choices": [{"message": {"content": None}}]}), "no message text"),
        (ChatReply(body={"choices": ["text"]}), "no message text"),
        (ChatReply(body={"error": {"message": "overloaded"}}), "an error: overloaded"),
    ],
)
def test_malformed_answers_are_clear_errors(reply: ChatReply, expected: str) -> None:
    with ChatServer([reply]) as server, pytest.raises(LLMError, match=expected):
        OpenAIChat(server.base_url, "m").complete(HI)


def test_content_parts_are_joined() -> None:
    parts = [{"type": "text", "text": "Hello "}, {"type": "image"}, {"type": "text", "text": "you"}]
    body = {"choices": [{"message": {"role": "assistant", "content": parts}}]}
    with ChatServer([ChatReply(body=body)]) as server:
        assert OpenAIChat(server.base_url, "m").complete(HI) == "Hello you"


def test_connection_refused_says_so() -> None:
    with ChatServer() as server:
        url = server.base_url
    with pytest.raises(LLMError, match="connection refused \\(is the server running\\?\\)"):
        OpenAIChat(url, "m").complete(HI)


def test_a_server_that_never_answers_times_out() -> None:
    release = threading.Event()

    def stuck(request: ChatRequest) -> str:
        release.wait()
        return "too late"

    with ChatServer(stuck) as server:
        try:
            with pytest.raises(LLMError, match="did not answer within 0.2 s"):
                OpenAIChat(server.base_url, "m", timeout=0.2).complete(HI)
        finally:
            release.set()


def test_a_base_url_must_be_http() -> None:
    with pytest.raises(LLMError, match="http:// or https://"):
        OpenAIChat("localhost:11434/v1", "m")
    with pytest.raises(LLMError, match="model name is empty"):
        OpenAIChat("http://127.0.0.1:1/v1", " ")


# -- load_llm ------------------------------------------------------------------------


def test_no_endpoint_no_model(folder: Path) -> None:
    manifest = memdir.load_manifest(folder / "memdir.toml")
    assert load_llm(manifest, {}) is None
    assert load_llm(with_llm(manifest, base_url="http://127.0.0.1:11434/v1"), {}) is None
    assert load_llm(with_llm(manifest, model="llama3.1"), {}) is None
    assert load_llm(manifest, {"MEMDIR_LLM_MODEL": "llama3.1"}) is None


def test_the_manifest_configures_it(folder: Path) -> None:
    manifest = with_llm(
        memdir.load_manifest(folder / "memdir.toml"),
        base_url="http://127.0.0.1:11434/v1",
        model="llama3.1:8b",
        timeout_seconds=5,
        temperature=0.7,
    )
    chat = load_llm(manifest, {})
    assert isinstance(chat, OpenAIChat)
    assert (chat.url, chat.model, chat.timeout, chat.temperature) == (
        "http://127.0.0.1:11434/v1/chat/completions",
        "llama3.1:8b",
        5,
        0.7,
    )


def test_the_environment_wins(folder: Path) -> None:
    manifest = with_llm(
        memdir.load_manifest(folder / "memdir.toml"),
        base_url="http://127.0.0.1:11434/v1",
        model="llama3.1:8b",
        api_key_env="GROQ_API_KEY",
    )
    env = {"MEMDIR_LLM_MODEL": "qwen2.5:7b", "GROQ_API_KEY": KEY, "MEMDIR_LLM_API_KEY": "other"}
    with ChatServer(["ok"]) as server:
        chat = load_llm(manifest, {**env, "MEMDIR_LLM_BASE_URL": server.base_url})
        assert isinstance(chat, OpenAIChat) and chat.complete(HI) == "ok"
    assert server.requests[0].body["model"] == "qwen2.5:7b"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    blank = load_llm(manifest, {"MEMDIR_LLM_MODEL": "", "GROQ_API_KEY": ""})
    assert isinstance(blank, OpenAIChat) and blank.model == "llama3.1:8b"  # empty is unset
    assert blank._api_key is None


def test_the_manifest_table_is_read(folder: Path) -> None:
    with (folder / "memdir.toml").open("a") as toml:
        toml.write('\n[llm]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "mistral"\n')
    with memdir.open(folder, embedder="hashing") as memory:
        assert isinstance(memory.llm, OpenAIChat) and memory.llm.model == "mistral"


def test_memory_is_offline_by_default_and_the_llm_can_be_replaced(memory: memdir.Memory) -> None:
    assert memory.llm is None
    fake = FakeChat(["hi"])
    memory.llm = fake
    assert memory.llm is fake


def test_a_bad_base_url_leaves_memory_offline_with_a_notice(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_LLM_BASE_URL", "localhost:11434")
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "llama3.1")
    with memdir.open(folder, embedder="hashing") as memory:
        assert memory.llm is None
        assert any(n.store == "llm" and "http://" in n.message for n in memory.check())


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('base_url = "http://127.0.0.1:11434/v1"',
         "[llm] has a base_url but no model (set [llm] model or MEMDIR_LLM_MODEL)"),
        ('model = "llama3.1:8b"',
         "[llm] has a model but no base_url (set [llm] base_url or MEMDIR_LLM_BASE_URL)"),
    ],
)  # fmt: skip
def test_half_an_llm_leaves_memory_offline_with_a_notice(
    folder: Path, table: str, said: str
) -> None:
    """It was offline without a word: a model name forgotten looked like an LLM in use."""
    manifest = folder / "memdir.toml"
    manifest.write_text(manifest.read_text() + f"\n[llm]\n{table}\n")
    with memdir.open(folder, embedder="hashing") as memory:
        assert memory.llm is None
        assert [n.message for n in memory.check() if n.store == "llm"] == [
            f"working offline: {said}"
        ]
    manifest.write_text(manifest.read_text().replace(f"\n[llm]\n{table}\n", ""))
    with memdir.open(folder, embedder="hashing") as memory:  # no [llm] at all: nothing said
        assert memory.llm is None and memory.check() == []


# -- the fakes -----------------------------------------------------------------------


def test_fake_chat_answers_from_its_script() -> None:
    chat: ChatModel = FakeChat(["one", LLMError("down"), lambda messages: messages[-1]["content"]])
    assert chat.complete(HI) == "one"
    with pytest.raises(LLMError, match="down"):
        chat.complete(HI, json_mode=True)
    assert chat.complete(HI, max_tokens=9) == "Hi?"
    with pytest.raises(LLMError, match="no scripted reply left"):
        chat.complete(HI)
    assert isinstance(chat, FakeChat)
    assert [(c.json_mode, c.max_tokens) for c in chat.calls] == [
        (False, None),
        (True, None),
        (False, 9),
        (False, None),
    ]
    assert chat.calls[0].messages == HI and chat.calls[0].prompt == "Hi?"


def test_fake_chat_with_one_function_answers_every_call() -> None:
    chat = FakeChat(lambda messages: str(len(messages)), id="counter")
    assert [chat.complete(HI), chat.complete(HI[:1])] == ["2", "1"]
    assert chat.id == "counter" and chat.remaining == 0


def test_chat_server_routes_and_failures() -> None:
    def boom(request: ChatRequest) -> str:
        raise ValueError("scripted failure")

    with pytest.raises(RuntimeError, match="with block"):
        _ = ChatServer().base_url
    with ChatServer(boom, model="served") as server:
        with urllib.request.urlopen(server.base_url + "/models") as response:
            assert json.load(response)["data"][0]["id"] == "served"
        with pytest.raises(LLMError, match="HTTP 404: no route POST /v1/nope"):
            OpenAIChat(server.base_url.replace("/v1", "/v1/nope"), "m")._post({})
        with pytest.raises(LLMError, match="HTTP 500: ValueError: scripted failure"):
            OpenAIChat(server.base_url, "m", retry=RetryPolicy(retries=0)).complete(HI)
    assert [r.path for r in server.requests] == [
        "/v1/models",
        "/v1/nope/chat/completions",
        "/v1/chat/completions",
    ]


def test_chat_server_takes_more_replies() -> None:
    with ChatServer() as server:
        server.add("first", ChatReply(content="second"))
        chat = OpenAIChat(server.base_url, "m")
        assert [chat.complete(HI), chat.complete(HI)] == ["first", "second"]


def test_chat_server_keeps_its_script_for_completions() -> None:
    # A client that lists the models first (as SDKs do), or strays to another route,
    # leaves the scripted replies to the completions they were written for.
    with ChatServer(["first", "second"]) as server:
        with urllib.request.urlopen(server.base_url + "/models") as response:
            assert json.load(response)["data"][0]["id"] == "fake-model"
        with pytest.raises(LLMError, match="HTTP 404"):
            OpenAIChat(server.base_url.replace("/v1", "/v1/nope"), "m")._post({})
        chat = OpenAIChat(server.base_url, "m")
        assert chat.complete(HI) == "first"
        with urllib.request.urlopen(server.base_url + "/models") as response:
            assert response.status == 200
        assert chat.complete(HI) == "second"
