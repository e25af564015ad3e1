"""LLM summaries: the checks on a model's answer, repair once, the offline fallback."""

from __future__ import annotations

import pytest

from memdir.llm.chat import LLMError
from memdir.llm.checks import content_words, parse_json, strip_reasoning
from memdir.llm.summaries import PROMPT_MAX_CHARS, LLMDaySummariser, LLMSummariser, check_summary
from memdir.stores.intel import ExtractiveSummariser
from memdir.stores.journal import check_day_summary
from memdir.testing import FakeChat

NOTES = [
    "Acme raised prices by 20% for enterprise plans.",
    "Acme lost two enterprise customers to Globex after the price change.",
    "The office coffee machine broke.",
    "Globex launched an API with 12 integrations and Acme plans to follow.",
]
SOURCE = content_words(" ".join(NOTES))
GOOD = "Acme raised enterprise prices 20% and lost two customers to Globex.\nGlobex shipped 12 integrations."  # noqa: E501
OFFLINE = ExtractiveSummariser().summarise(NOTES, 3)
DAY = """\
# 2026-11-30

## Decisions
- Chose Redis over Postgres for caching because reads dominate 50:1
- Rolled out plan 7 because latency stays under 40 ms

## Learnings
- The Stripe webhook needs HTTPS even in dev
"""


# -- the checks ----------------------------------------------------------------------


def test_a_good_summary_is_one_line_of_sentences() -> None:
    assert check_summary(GOOD, 3, 300, SOURCE) == (
        "Acme raised enterprise prices 20% and lost two customers to Globex. "
        "Globex shipped 12 integrations.",
        None,
    )


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("- Acme raised prices by 20%\n- Globex launched an API", "Acme raised prices by 20%. "),
        ('"Acme raised prices by 20%."', "Acme raised prices by 20%."),
        ("<think>The notes say...</think>\nAcme raised prices by 20%.", "Acme raised prices"),
        ("  \n\nAcme raised prices by 20%!\n\n", "Acme raised prices by 20%!"),
    ],
)
def test_answers_are_tidied(answer: str, expected: str) -> None:
    summary, problem = check_summary(answer, 3, 300, SOURCE)
    assert problem is None and summary.startswith(expected)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "the answer is empty"),
        (" \n <think>hmm</think> ", "the answer is empty"),
        ("<think>Acme raised prices by 20%.", "a <think> block leaked into the answer"),
        ("Acme raised prices.</think>", "a <think> block leaked"),
        ("## Summary\nAcme raised prices.", "it holds a markdown heading ('## Summary')"),
        ("```\nAcme raised prices.\n```", "it holds a code fence"),
        ("Here is the summary:\nAcme raised prices.", "it talks about the task"),
        ("Sure! Acme raised prices.", "it talks about the task"),
        ("Acme raised prices. Globex launched. Acme lost two. Acme plans more.", "it has 4 "),
        ("Acme raised prices.\nGlobex launched\nAcme lost two\nAcme plans to follow", "it has 4"),
        ("Acme " + "raised prices " * 30 + ".", "it is 426 characters long; at most 300"),
        (
            "Acme raised prices. Quarterly weather forecasts improved.",
            "a sentence is not about the notes",
        ),
    ],
)
def test_bad_answers_are_named(answer: str, problem: str) -> None:
    summary, found = check_summary(answer, 3, 300, SOURCE)
    assert summary == "" and found is not None and found.startswith(problem), found


def test_text_without_spaces_is_matched_by_character_pairs() -> None:
    notes = content_words("阿克米公司将企业版价格提高了20%，并失去了两个客户。")
    assert check_summary("阿克米提高了价格。", 3, 300, notes) == ("阿克米提高了价格。", None)
    assert (
        check_summary("天气很好。", 3, 300, notes)[1]
        == "a sentence is not about the notes ('天气很好。')"
    )
    four = check_summary("阿克米。价格。客户。两个。", 3, 300, notes)
    assert four == ("", "it has 4 sentences; at most 3")


def test_reasoning_and_json_helpers() -> None:
    assert strip_reasoning("<THINK>a\nb</think> ok") == ("ok", None)
    assert parse_json('```json\n{"facts": []}\n```') == ({"facts": []}, None)
    assert parse_json("[1, 2]") == ([1, 2], None)
    value, problem = parse_json("facts: none")
    assert value is None and problem == "it is not valid JSON ('facts: none')"


# -- the intel summariser ------------------------------------------------------------


def test_a_good_answer_is_used_in_one_call() -> None:
    chat = FakeChat([GOOD])
    summariser = LLMSummariser(chat)
    assert summariser.summarise(NOTES, 3) == (
        "Acme raised enterprise prices 20% and lost two customers to Globex. "
        "Globex shipped 12 integrations."
    )
    assert summariser.notes == [] and len(chat.calls) == 1
    [call] = chat.calls
    assert call.messages[0]["role"] == "system" and not call.json_mode
    assert "at most 3 sentences" in call.prompt and "300 characters" in call.prompt
    assert "- The office coffee machine broke." in call.prompt


def test_a_bad_answer_is_repaired_once() -> None:
    chat = FakeChat(["## Week\nAcme raised prices.", GOOD])
    summariser = LLMSummariser(chat)
    assert summariser.summarise(NOTES, 3).startswith("Acme raised enterprise prices")
    assert summariser.notes == [] and len(chat.calls) == 2
    repair = chat.calls[1].messages
    assert repair[:2] == chat.calls[0].messages
    assert repair[2] == {"role": "assistant", "content": "## Week\nAcme raised prices."}
    assert repair[3]["content"].startswith(
        "That answer was rejected: it holds a markdown heading ('## Week'); write plain "
        "sentences. Try again."
    )


def test_two_bad_answers_fall_back_to_the_offline_summary_and_say_why() -> None:
    heard: list[str] = []
    chat = FakeChat(["One. Two. Three. Four. Five.", "Acme. Globex. Acme. Globex."])
    summariser = LLMSummariser(chat, on_note=heard.append)
    assert summariser.summarise(NOTES, 3) == OFFLINE
    assert (
        summariser.notes
        == heard
        == ["LLM summary rejected: it has 4 sentences; at most 3; used the offline summary"]
    )
    assert len(chat.calls) == 2


def test_an_unreachable_model_falls_back() -> None:
    summariser = LLMSummariser(FakeChat([LLMError("cannot reach the LLM: connection refused")]))
    assert summariser.summarise(NOTES, 3) == OFFLINE
    assert summariser.notes == [
        "LLM summary failed: cannot reach the LLM: connection refused; used the offline summary"
    ]


def test_without_a_model_or_notes_it_is_the_offline_summariser() -> None:
    chat = FakeChat()
    assert LLMSummariser(None).summarise(NOTES, 3) == OFFLINE
    assert LLMSummariser(chat).summarise(["  "], 3) == ""
    assert LLMSummariser(chat).summarise(NOTES, 0) == ""
    assert chat.calls == []


def test_following_asks_for_the_model_at_each_summary() -> None:
    current: list[FakeChat | None] = [None]
    summariser = LLMSummariser.following(lambda: current[0])
    assert summariser.summarise(NOTES, 3) == OFFLINE
    current[0] = FakeChat([GOOD])
    assert summariser.summarise(NOTES, 3).startswith("Acme raised enterprise")


def test_the_prompt_quotes_no_more_than_its_budget() -> None:
    chat = FakeChat([GOOD])
    many = [f"Acme note {n}: " + "prices went up again " * 10 for n in range(200)]
    LLMSummariser(chat).summarise(many, 3)
    prompt = chat.calls[0].prompt
    assert len(prompt) < PROMPT_MAX_CHARS + 1000 and "more notes)" in prompt


# -- the journal day -----------------------------------------------------------------


def test_a_day_summary_keeps_the_days_headings() -> None:
    lines = ["## decisions", "- Redis for caching: reads dominate 50:1", "", "## Learnings",
             "- Stripe webhooks need HTTPS in dev"]  # fmt: skip
    assert check_day_summary(lines, DAY, 16) == (
        [
            "## Decisions",
            "- Redis for caching: reads dominate 50:1",
            "## Learnings",
            "- Stripe webhooks need HTTPS in dev",
        ],
        None,
    )


def test_a_day_summary_without_a_heading_gets_one() -> None:
    lines = ["- Redis for caching because reads dominate"]
    assert check_day_summary(lines, DAY, 16) == (["## Summary", *lines], None)
    assert check_day_summary(["## Summary", *lines], DAY, 16) == (["## Summary", *lines], None)
    _, problem = check_day_summary(lines, DAY, 1)
    assert problem == "it has 2 lines, headings included; at most 1"


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ([], "the summary is empty"),
        ("- Redis", "the summary must be a list of lines of text"),
        (["## Decisions"], "the summary has headings and no lines"),
        (["## Ideas", "- Redis"], "line 1 is a heading the day does not have ('## Ideas'); use"),
        (["### Decisions", "- Redis"], "line 1 is a heading the day does not have"),
        (["## Decisions", "- Redis", "## Decisions", "- Postgres"], "the heading '## Decisions'"),
        (["- Redis " + "cache " * 50], "line 1 is 307 characters; at most 200"),
        (["- Redis", "- Quarterly weather forecasts"], "line 2 is not about the day"),
        (["- Redis", "```", "- Postgres"], "line 2: it holds a code fence"),
        (["<think>", "- Redis"], "a <think> block leaked"),
        (["- Redis"] * 17, "it has 18 lines, headings included; at most 16"),
    ],
)
def test_bad_day_summaries_are_named(lines: list[str], problem: str) -> None:
    out, found = check_day_summary(lines, DAY, 16)
    assert out == [] and found is not None and found.startswith(problem), found


def test_the_day_summariser_repairs_once_then_leaves_the_verdict_to_the_store() -> None:
    chat = FakeChat(["## Ideas\n- Redis", "## Decisions\n- Redis because reads dominate"])
    assert LLMDaySummariser(chat)(DAY, 16) == ["## Decisions", "- Redis because reads dominate"]
    first, second = chat.calls
    assert "at most 16 lines" in first.prompt and "## Decisions, ## Learnings" in first.prompt
    assert first.prompt.endswith(DAY)
    assert second.messages[-1]["content"].startswith(
        "That answer was rejected: line 1 is a heading the day does not have ('## Ideas')"
    )
    twice_bad = FakeChat(["## Ideas\n- Redis", "## Ideas\n- Redis"])
    assert LLMDaySummariser(twice_bad)(DAY, 16) == ["## Ideas", "- Redis"]  # the store rejects it


def test_a_big_day_is_shown_in_part() -> None:
    chat = FakeChat(["- Redis"])
    big = DAY + "".join(
        f"- Lesson {n}: warm the cache before the peak window\n" for n in range(900)
    )
    LLMDaySummariser(chat)(big, 16)
    prompt = chat.calls[0].prompt
    assert len(prompt) < PROMPT_MAX_CHARS + 1500
    assert "- Chose Redis over Postgres" in prompt and "more lines)" in prompt
