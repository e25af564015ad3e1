"""A memory folder with something in every layer, for the page's tests."""

from __future__ import annotations

from pathlib import Path

import memdir
from memdir.dream.cycle import run_dream
from memdir.testing import FakeClock

PEOPLE = ["alice-moreau", "bob-lind", "carla-diaz", "dev-patel"]


def fill(root: Path) -> FakeClock:
    """Init ``root`` and write notebook, knowledge, state, cards with links, a journal,
    activities, a session and one dream (with its snapshot); return the clock used."""
    clock = FakeClock("2026-11-30T10:00:00Z")
    memdir.init(root)
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        fill_memory(memory, clock)
    return clock


def fill_memory(memory: memdir.Memory, clock: FakeClock) -> None:
    """``fill``'s content, written into ``memory`` (opened with ``clock``), on any
    backend."""
    memory.notebook.update("current-task", "Migrate billing to the payments API (step 2).")
    memory.notebook.update("user-mood", "Short answers today: the user is on a deadline.")
    memory.knowledge.update(
        section="conventions", content="- Deploys happen on Tuesdays.\n- Use UTC in logs."
    )
    memory.knowledge.update(section="billing", content="Invoices are sent on the 1st.")
    for n in range(8):
        memory.knowledge.save(
            f"The payments API returns error 4{n:02d} when the currency is missing.",
            type="fact",
            tags=("billing",),
        )
    memory.knowledge.save("The payments API needs a currency field.", tags=("billing",))
    memory.knowledge.save("Payments API: the currency field is required.", tags=("billing",))
    memory.state.set("deploy", "staging green, production pending")
    for n, person in enumerate(PEOPLE):
        other = PEOPLE[(n + 1) % len(PEOPLE)]
        memory.vault.write(
            person,
            f"# {person.replace('-', ' ').title()}\nWorks with [[{other}]] at [[acme-corp]].",
            type="person",
            tags=["client"],
        )
    memory.vault.write(
        "acme-corp",
        "# Acme Corp\nA client in Berlin.\n\n## History\n- 2026-09-20 (agent-1): Signed.\n",
        type="company",
        fields={"created": "2026-09-01", "last_accessed": "2026-11-12"},
    )
    memory.vault.write(
        "old-project",
        "# Old project\nShelved; see [[acme-corp]].",
        type="project",
        fields={"created": "2026-06-01", "last_accessed": "2026-08-15"},
    )
    memory.vault.write("lonely-idea", "# Lonely idea\nNo links at all.", type="idea")
    memory.decay()  # the cards' tiers follow their last access
    memory.journal.append("decision", "Chose the new payments API over a patch.")
    with memory.history.activity("task", "migrate billing") as run:
        run.log("text", "started the migration")
        run.log("tool_start", "memory_search billing")
    with memory.history.activity("chat", "morning check-in") as run:
        run.log("text", "the user asked about invoices")
    sid = memory.sessions.create("sess")
    memory.sessions.append_message(sid, {"role": "user", "content": "When are invoices sent?"})
    memory.sessions.append_message(sid, {"role": "assistant", "content": "On the 1st."})
    clock.advance(minutes=5)
    run_dream(memory, force=True)
    clock.advance(minutes=5)
    for text, kind, tags in [
        ("The user prefers invoices as PDF.", "insight", ()),
        ("Refunds take five business days.", "fact", ("billing", "refunds")),
    ]:
        memory.knowledge.save(text, type=kind, tags=tags).raise_for_refusal()
