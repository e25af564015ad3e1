"""Post-task distillation: an ended activity becomes observations in knowledge.md."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import memdir
from memdir import Memory
from memdir.dream.distill import MAX_TAGS, RECORD_MAX_CHARS, check_facts, distill_activity
from memdir.llm.chat import LLMError
from memdir.testing import ChatServer, FakeChat, FakeClock

LABEL = "Fix the billing webhook"
SUMMARY = "Fixed the Stripe billing webhook: it retries 3 times and needs HTTPS even in dev."
KEYWORDS = ["edit_file", "run_tests", "HTTP 400", "billing/webhook.py", "tests/test_billing.py",
            "stripe", "deploy"]  # fmt: skip
FACTS = [
    "The Stripe billing webhook retries failed deliveries 3 times.",
    "The Stripe billing webhook needs HTTPS even in dev.",
]


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMDIR_LLM_BASE_URL", "MEMDIR_LLM_MODEL", "MEMDIR_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def turn_on(folder: Path) -> None:
    toml = folder / "memdir.toml"
    text = toml.read_text(encoding="utf-8")
    if re.search(r"^\[dream\]$", text, re.MULTILINE):
        text = re.sub(r"^\[dream\]$", "[dream]\ndistill = true", text, flags=re.MULTILINE)
    else:
        text += "\n[dream]\ndistill = true\n"
    toml.write_text(text, encoding="utf-8")


@pytest.fixture
def distilling(folder: Path, clock: FakeClock) -> Iterator[Memory]:
    turn_on(folder)
    with memdir.open(folder, clock=clock, embedder="hashing") as opened:
        assert opened.manifest.dream.distill
        yield opened


def run_task(memory: Memory, type: str = "task", success: bool = True) -> str:
    activity = memory.history.start_activity(type, LABEL)
    memory.history.log(activity, "tool_start", "edit_file billing/webhook.py")
    memory.history.log(activity, "text", "Stripe retries a failed delivery 3 times.")
    memory.history.log(activity, "error", "HTTP 400: webhook URL must be HTTPS")
    memory.history.end_activity(activity, SUMMARY, KEYWORDS, success=success)
    return activity


def test_off_by_default(memory: Memory) -> None:
    assert not memory.manifest.dream.distill
    run_task(memory)
    assert memory.knowledge.observations() == []


def test_offline_the_summary_becomes_a_task_result(distilling: Memory) -> None:
    run_task(distilling)
    [obs] = distilling.knowledge.observations()
    assert (obs.type, obs.content) == ("task_result", SUMMARY)
    assert obs.tags == tuple(KEYWORDS[:MAX_TAGS])
    assert distilling.check() == []


def test_the_context_manager_path_distills_too(distilling: Memory) -> None:
    with distilling.history.activity("chat", "Answer about invoices") as run:
        run.log("text", "Invoices are due on the 5th of each month.")
        run.summary = "Told the user invoices are due on the 5th of each month."
    [obs] = distilling.knowledge.observations()
    assert obs.content == "Told the user invoices are due on the 5th of each month."


def test_internal_and_failed_activities_are_not_distilled(distilling: Memory) -> None:
    distilling.llm = FakeChat()  # never asked
    run_task(distilling, type="internal")
    run_task(distilling, success=False)
    with pytest.raises(ValueError), distilling.history.activity("task", "Doomed") as run:
        run.summary = "It went wrong."
        raise ValueError("boom")
    assert distilling.knowledge.observations() == []
    assert distilling.llm.calls == []
    assert len(distilling.history.recent(10)) == 3


def test_with_an_llm_its_facts_are_saved(distilling: Memory) -> None:
    chat = FakeChat([json.dumps({"facts": FACTS})])
    distilling.llm = chat
    activity = run_task(distilling)
    saved = distilling.knowledge.observations()
    assert [(o.type, o.content) for o in saved] == [("fact", fact) for fact in FACTS]
    assert all(o.tags == tuple(KEYWORDS[:MAX_TAGS]) for o in saved)
    [call] = chat.calls
    assert call.json_mode and call.max_tokens == 1024
    assert '{"facts": ["...", ...]}' in call.messages[0]["content"]
    assert call.prompt.splitlines() == [
        f"Task (task): {LABEL}",
        f"Summary: {SUMMARY}",
        f"Keywords: {', '.join(KEYWORDS)}",
        "",
        "Log:",
        "[tool_start] edit_file billing/webhook.py",
        "[text] Stripe retries a failed delivery 3 times.",
        "[error] HTTP 400: webhook URL must be HTTPS",
    ]
    assert distilling.history.get(activity) is not None and distilling.check() == []


def test_an_empty_list_means_nothing_worth_keeping(distilling: Memory) -> None:
    distilling.llm = FakeChat(["[]"])
    activity = distilling.history.start_activity("task", "Say hello")
    distilling.history.end_activity(activity, "Said hello.")
    assert distilling.knowledge.observations() == []
    assert distilling.check() == []


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("The webhook retries 3 times.", "it is not valid JSON ('The webhook retries 3 times.')"),
        (json.dumps({"facts": FACTS * 2}), "it has 4 facts; at most 3"),
        (json.dumps({"notes": FACTS}), 'it is not a JSON list of strings (nor {"facts": [...]})'),
        (json.dumps([FACTS[0], 3]), "fact 2 is not a string"),
        (json.dumps(["  "]), "fact 1 is empty"),
        (json.dumps(["## Billing"]), "fact 1: it holds a markdown heading"),
        (json.dumps(["Stripe " + "webhook " * 70]), "fact 1 is 566 characters; at most 500"),
        (json.dumps(["Quarterly weather forecasts improved."]), "fact 1 is about nothing in the"),
        ("<think>" + json.dumps(FACTS), "a <think> block leaked into the answer"),
    ],
)
def test_a_bad_answer_falls_back_to_the_summary_with_a_notice(
    distilling: Memory, answer: str, why: str
) -> None:
    distilling.llm = FakeChat([answer])
    activity = run_task(distilling)
    [obs] = distilling.knowledge.observations()
    assert (obs.type, obs.content) == ("task_result", SUMMARY)
    [notice] = distilling.check()
    assert notice.store == "distill"
    assert notice.message.startswith(f"{activity}: LLM facts rejected: {why}")
    assert notice.message.endswith("; saved the task summary instead")


def test_an_unreachable_llm_falls_back(distilling: Memory) -> None:
    distilling.llm = FakeChat([LLMError("cannot reach the LLM: connection refused")])
    activity = run_task(distilling)
    assert [o.type for o in distilling.knowledge.observations()] == ["task_result"]
    assert [n.message for n in distilling.check()] == [
        f"{activity}: LLM distillation failed: cannot reach the LLM: connection refused; "
        "saved the task summary instead"
    ]


def test_it_never_raises_into_end_activity(distilling: Memory) -> None:
    distilling.llm = FakeChat([RuntimeError("a plugin bug")])
    activity = run_task(distilling)  # returns normally
    assert distilling.history.get(activity).activity.ended_at is not None  # type: ignore[union-attr]
    assert [n.message for n in distilling.check()] == [
        f"could not distill {activity}: RuntimeError: a plugin bug"
    ]
    assert distilling.knowledge.observations() == []


def test_a_refused_save_is_a_notice(distilling: Memory) -> None:
    key = "sk-proj-" + "Ab3" * 12  # a credential: knowledge.md refuses it
    activity = distilling.history.start_activity("task", "Rotate the key")
    distilling.history.end_activity(activity, f"Set OPENAI_API_KEY to {key}.")
    assert distilling.knowledge.observations() == []
    [notice] = distilling.check()
    assert notice.message.startswith(f"{activity}: a task_result was not saved: ")
    assert key not in notice.message


def test_distill_activity_reports_what_it_did(memory: Memory) -> None:
    memory.llm = FakeChat(["[]", json.dumps(FACTS[:1]), "nope"])  # distill is off: by hand
    ended = [memory.history.get(run_task(memory)) for _ in range(3)]
    results = [distill_activity(memory, d.activity) for d in ended if d is not None]
    assert [(r.mode, len(r.saved), len(r.notes)) for r in results] == [
        ("llm", 0, 0),
        ("llm", 1, 0),
        ("offline", 1, 1),
    ]
    internal = memory.history.get(run_task(memory, type="internal"))
    assert internal is not None and distill_activity(memory, internal.activity).mode == "skipped"


def test_the_record_keeps_the_latest_events_within_its_budget(distilling: Memory) -> None:
    chat = FakeChat(["[]"])
    distilling.llm = chat
    activity = distilling.history.start_activity("task", "A long task")
    for n in range(200):
        distilling.history.log(activity, "text", f"step {n}: " + "checked the cache again " * 4)
    distilling.history.end_activity(activity, "Warmed the cache.")
    prompt = chat.calls[0].prompt
    assert len(prompt) <= RECORD_MAX_CHARS
    assert "earlier events)" in prompt and prompt.rstrip().endswith(
        "step 199: " + "checked the cache again " * 3 + "checked the cache again"
    )


def test_distillation_over_http(folder: Path, clock: FakeClock) -> None:
    turn_on(folder)
    with ChatServer([json.dumps({"facts": FACTS[:1]})]) as server:
        with (folder / "memdir.toml").open("a") as toml:
            toml.write(f'\n[llm]\nbase_url = "{server.base_url}"\nmodel = "distiller"\n')
        with memdir.open(folder, clock=clock, embedder="hashing") as memory:
            run_task(memory)
            assert [o.content for o in memory.knowledge.observations()] == FACTS[:1]
    [request] = server.requests
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["model"] == "distiller" and LABEL in request.messages[1]["content"]


def test_without_a_knowledge_layer_it_says_so_once(tmp_path: Path, clock: FakeClock) -> None:
    root = tmp_path / "mem"
    memdir.init(root)
    turn_on(root)
    toml = root / "memdir.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(re.sub(r"\[layers\.knowledge\]\n(?:[^\[\n].*\n)*\n?", "", text))
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        assert not memory.has("knowledge")
        run_task(memory)
        run_task(memory)
        assert [n.message for n in memory.check()] == [
            "[dream] distill is on but the manifest has no knowledge layer; nothing distilled"
        ]


@pytest.mark.parametrize(
    ("answer", "facts"),
    [
        ('["A fact about Stripe."]', ["A fact about Stripe."]),
        ('{"facts": ["A fact about Stripe.", "A fact about Stripe."]}', ["A fact about Stripe."]),
        ('```json\n{"facts": ["A  fact\\nabout Stripe."]}\n```', ["A fact about Stripe."]),
        ("<think>Which facts?</think>[]", []),
    ],
)
def test_check_facts_accepts_the_usual_shapes(answer: str, facts: list[str]) -> None:
    assert check_facts(answer, {"stripe"}) == (facts, None)
