"""Journal compression across a folder: every day over 20 KB (see ``JournalStore.compress``),
with the hooks that file its facts into cards (a line naming a card joins its
History) and lessons (learnings), and, when ``memory.llm`` is set, a summary the
LLM writes (``LLMDaySummariser``); a summary not kept is a note in the day's
report and in ``memory.notices``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.llm.summaries import LLMDaySummariser
from memdir.results import Notice
from memdir.stores.journal import CompressionReport
from memdir.stores.vault import card_links

if TYPE_CHECKING:
    from memdir.memory import Memory


def compress_journals(memory: Memory) -> list[CompressionReport]:
    cards = memory.vault.cards() if memory.has("vault") else []
    titles = {info.title.lower(): info.path for info in cards if len(info.title) >= 3}

    def to_card(line: str) -> str | None:
        named = [path for title, path in titles.items() if title in line.lower()]
        for target in card_links({}, line):
            found = memory.vault.resolve(target)
            if found is not None:
                named.append(found)
        for path in dict.fromkeys(named):
            memory.vault.append_history(path, line)
        return named[0] if named else None

    llm = memory.llm
    summarise_day = LLMDaySummariser(llm) if llm is not None else None
    reports = []
    for day in memory.journal.days():
        source = f"journal {day.isoformat()}"

        def to_lesson(line: str, source: str = source) -> bool:
            return memory.lessons.add_learning("Learnings", line, source=source).ok

        reports.append(
            memory.journal.compress(
                day,
                to_card=to_card if cards else None,
                to_lesson=to_lesson if memory.has("lessons") else None,
                summarise_day=summarise_day,
            )
        )
        store = memory.journal.path(day)
        memory.notices += [Notice(store, note) for note in reports[-1].notes]
    return [report for report in reports if report.compressed]
