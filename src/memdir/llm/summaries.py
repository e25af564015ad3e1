"""Summaries a model writes, checked before memdir keeps them; the offline ones otherwise.

Two summaries can come from the configured LLM (``memory.llm``):
- a research-intel week: ``LLMSummariser``, an intel ``Summariser`` (at most N
  sentences, a line each, within ``SUMMARY_MAX_CHARS``);
- a journal day over 20 KB: ``LLMDaySummariser``, the ``summarise_day`` of
  ``JournalStore.compress`` (at most the summary's line budget, under the day's
  own headings).

Either way the answer is checked (``memdir.llm.checks``): not empty, within its
budget, plain text (no headings but the day's own, no code fences, no
preamble, no leaked ``<think>``), every line about the notes it summarises. A
rejected answer goes back to the model once with the problem stated (repair
once); a second rejection, or an ``LLMError``, falls back to the offline
summary, and the fallback is reported in the job's report: "LLM summary
rejected: <why>; used the offline summary".
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memdir.files.sections import SectionDocument
from memdir.llm.chat import ChatModel, LLMError, Message
from memdir.llm.checks import content_words, grounded, line_problem, strip_reasoning
from memdir.stores.intel import SUMMARY_MAX_CHARS, ExtractiveSummariser, Summariser
from memdir.stores.journal import check_day_summary

SUMMARY_MAX_TOKENS = 1024
"""room for the answer (and a reasoning model's <think> block before it)"""
PROMPT_MAX_CHARS = 12_000
"""what a prompt may quote of the notes or the day: ~3,000 tokens, within a small model's window"""
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[$])|(?<=[。！？])\s*")
_BULLET_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_SYSTEM = (
    "You write summaries for an AI agent's long-term memory. Use only what the notes say. "
    "Answer with the summary alone, in plain text: no headings, no markdown, no preamble."
)


class LLMSummariser:
    """An intel ``Summariser`` that asks the LLM, checks its answer, asks once more with
    the problem stated, and falls back to ``fallback`` (``ExtractiveSummariser``).

    ``notes`` collects a sentence per fallback (the intel store moves them into its
    report); ``on_note`` is called with each as well. With no LLM it is the fallback.
    """

    def __init__(
        self,
        llm: ChatModel | None,
        *,
        fallback: Summariser | None = None,
        max_chars: int = SUMMARY_MAX_CHARS,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self._get_llm: Callable[[], ChatModel | None] = lambda: llm
        self.fallback: Summariser = fallback or ExtractiveSummariser(max_chars)
        self.max_chars = max_chars
        self.on_note = on_note
        self.notes: list[str] = []

    @classmethod
    def following(
        cls,
        get_llm: Callable[[], ChatModel | None],
        *,
        fallback: Summariser | None = None,
        max_chars: int = SUMMARY_MAX_CHARS,
        on_note: Callable[[str], None] | None = None,
    ) -> LLMSummariser:
        """One that asks ``get_llm()`` at each summary (``Memory.intel`` follows
        ``memory.llm`` so, even when it is replaced later)."""
        summariser = cls(None, fallback=fallback, max_chars=max_chars, on_note=on_note)
        summariser._get_llm = get_llm
        return summariser

    def summarise(self, texts: list[str], max_sentences: int) -> str:
        llm = self._get_llm()
        if llm is None or max_sentences < 1 or not any(text.strip() for text in texts):
            return self.fallback.summarise(texts, max_sentences)
        source = content_words(" ".join(texts))
        ask = (
            f"Summarise this week's research notes in at most {max_sentences} sentences, one "
            f"per line, {self.max_chars} characters in all. Keep the names, numbers and "
            "dates that matter; leave out the rest."
        )
        messages: list[Message] = [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"{ask}\n\nNotes:\n{_quote(texts)}"},
        ]
        try:
            answer = llm.complete(messages, max_tokens=SUMMARY_MAX_TOKENS)
            summary, problem = check_summary(answer, max_sentences, self.max_chars, source)
            if problem is not None:
                messages += _repair(answer, problem, ask)
                answer = llm.complete(messages, max_tokens=SUMMARY_MAX_TOKENS)
                summary, problem = check_summary(answer, max_sentences, self.max_chars, source)
        except LLMError as exc:
            return self._fall_back(f"LLM summary failed: {exc}", texts, max_sentences)
        if problem is not None:
            return self._fall_back(f"LLM summary rejected: {problem}", texts, max_sentences)
        return summary

    def _fall_back(self, why: str, texts: list[str], max_sentences: int) -> str:
        note = f"{why}; used the offline summary"
        self.notes.append(note)
        if self.on_note is not None:
            self.on_note(note)
        return self.fallback.summarise(texts, max_sentences)


def check_summary(
    answer: str, max_sentences: int, max_chars: int, source_words: set[str] | None = None
) -> tuple[str, str | None]:
    """The answer as one line of at most ``max_sentences`` sentences, or the problem.

    Bullet markers are dropped and a line without an end mark gets a full stop;
    ``source_words`` (the notes' ``content_words``), when given, must meet each sentence.
    """
    text, problem = strip_reasoning(answer)
    if problem is not None:
        return "", problem
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "", "the answer is empty"
    for line in lines:
        problem = line_problem(line)
        if problem is not None:
            return "", problem
    sentences: list[str] = []
    for line in lines:
        line = _BULLET_RE.sub("", line).strip()
        if len(line) > 1 and line[0] == line[-1] == '"':  # a quoted answer
            line = line[1:-1].strip()
        parts = [part.strip() for part in _SENTENCE_RE.split(line) if part.strip()]
        sentences += [part if part[-1] in ".!?…。！？" else part + "." for part in parts]
    summary = "".join(
        part if n == 0 or sentences[n - 1][-1] in "。！？" else " " + part
        for n, part in enumerate(" ".join(sentence.split()) for sentence in sentences)
    )
    if len(sentences) > max_sentences:
        return "", f"it has {len(sentences)} sentences; at most {max_sentences}"
    if len(summary) > max_chars:
        return "", f"it is {len(summary)} characters long; at most {max_chars}"
    for sentence in sentences:
        if source_words is not None and not grounded(sentence, source_words):
            return "", f"a sentence is not about the notes ({sentence[:80]!r})"
    return summary, None


class LLMDaySummariser:
    """``summarise_day`` for ``JournalStore.compress``: the day's text and a line budget
    in, the summary's lines out. An answer that fails ``check_day_summary`` goes back
    once with the problem; the store checks the second answer and reports a fallback."""

    def __init__(self, llm: ChatModel) -> None:
        self.llm = llm

    def __call__(self, day_text: str, max_lines: int) -> list[str]:
        headings = [section.key for section in SectionDocument.parse(day_text)]
        ask = (
            f"Summarise this day of an AI agent's journal in at most {max_lines} lines, "
            "headings included. Keep the decisions with their reasons, what was learned and "
            "the milestones; leave out repetition. Group the lines under the day's own "
            f"headings ({', '.join('## ' + key for key in headings)}) or '## Summary', and "
            "no others; every other line is a '- ' bullet of at most 200 characters."
        )
        messages: list[Message] = [
            {"role": "system", "content": _SYSTEM.replace("no headings, ", "")},
            {"role": "user", "content": f"{ask}\n\nThe day:\n{_excerpt(day_text)}"},
        ]
        answer = self.llm.complete(messages, max_tokens=SUMMARY_MAX_TOKENS)
        lines = answer.splitlines()
        _, problem = check_day_summary(lines, day_text, max_lines)
        if problem is None:
            return lines
        messages += _repair(answer, problem, ask)
        return self.llm.complete(messages, max_tokens=SUMMARY_MAX_TOKENS).splitlines()


def _repair(answer: str, problem: str, ask: str) -> list[Message]:
    return [
        {"role": "assistant", "content": answer},
        {"role": "user", "content": f"That answer was rejected: {problem}. Try again. {ask}"},
    ]


def _quote(texts: list[str]) -> str:
    """The notes as bullets, as many as fit in ``PROMPT_MAX_CHARS``."""
    lines: list[str] = []
    used = 0
    for n, text in enumerate(texts):
        line = "- " + " ".join(text.split())
        if used + len(line) > PROMPT_MAX_CHARS and lines:
            lines.append(f"(and {len(texts) - n} more notes)")
            break
        lines.append(line[:PROMPT_MAX_CHARS])
        used += len(line) + 1
    return "\n".join(lines)


def _excerpt(day_text: str) -> str:
    """The day within ``PROMPT_MAX_CHARS``: each section gets an equal share, its
    lines in order, long ones cut; what is left out is counted."""
    if len(day_text) <= PROMPT_MAX_CHARS:
        return day_text
    doc = SectionDocument.parse(day_text)
    sections = [s for s in doc if s.body.strip()]
    share = PROMPT_MAX_CHARS // max(1, len(sections))
    out = [line for line in doc.preamble.splitlines() if line.strip()][:5]
    for section in sections:
        out += ["", f"## {section.key}"]
        body = [line.strip() for line in section.body.splitlines() if line.strip()]
        used = 0
        for n, line in enumerate(body):
            line = line if len(line) <= 200 else line[:197] + "..."
            if used + len(line) > share:
                out.append(f"(and {len(body) - n} more lines)")
                break
            out.append(line)
            used += len(line) + 1
    return "\n".join(out)
