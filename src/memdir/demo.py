"""``memdir demo``: memdir's main job, end to end, in a fresh folder.

Writes notebook entries (the fifth evicts the oldest), saves observations,
refuses an empty one and an array, writes a curated section, shows a write
refused over the section cap, sets a state snapshot, searches, dreams (a
paraphrase merged, a theme promoted into a curated section), then prints the
files and what an agent would load into its prompt, and how to open its web page.

``demo(path)`` runs it in ``path`` (the user's folder: kept) or, without one, in a
new ``memdir-demo-*`` folder in the temporary directory, removed at the end (even
when the demo fails) unless ``keep`` asks to look at it; the last line says which.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.tree import Tree

from memdir.errors import MemdirError
from memdir.home import agents_dir
from memdir.memory import Memory, open_memory
from memdir.paths import resolved
from memdir.results import WriteResult
from memdir.scaffold import init_folder
from memdir.server.mcp import host_config
from memdir.tools import Tools

DEMO_PREFIX = "memdir-demo-"


def demo(path: Path | None, console: Console, *, keep: bool = False) -> Path:
    """Run the demo in ``path`` (new or empty), or in a temporary folder removed at the
    end unless ``keep``; returns the folder it ran in."""
    if path is not None:
        root = resolved(path.expanduser())
        if root.exists() and any(root.iterdir()):
            raise MemdirError(f"{root} is not empty; the demo needs a new or empty folder")
        run_demo(root, console).close()
        console.print(f"\nThe demo's folder: [cyan]{escape(str(root))}[/]")
        return root
    root = Path(tempfile.mkdtemp(prefix=DEMO_PREFIX))
    try:
        run_demo(root, console).close()
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    if keep:
        where = escape(str(root))
        console.print(f"\nKept the demo's folder: [cyan]{where}[/] (delete it when done)")
    else:
        console.print(
            f"\nRemoved the demo's folder ({escape(str(root))}); `memdir demo --keep` keeps "
            "it to look at, `memdir demo PATH` runs in a folder of your choice."
        )
    return root


def run_demo(root: Path, console: Console) -> Memory:
    report = init_folder(root)
    console.rule("[bold]memdir demo")
    console.print(f"A fresh memory folder: [cyan]{report.root}[/] ({len(report.created)} files)")
    memory = open_memory(root)

    _step(console, "1. Working memory: NOTEBOOK.md holds at most 4 agent entries")
    for key, text in [
        ("current-task", "Migrate the billing service to the new payments API (step 2 of 5)."),
        ("user-mood", "The user wants short answers today; they are on a deadline."),
        ("open-question", "Does the payments API support partial refunds? Asked in #billing."),
        ("next-step", "Write the refund adapter once the question is answered."),
        ("blocker", "Staging database is down; wait for ops before running migrations."),
    ]:
        _show(console, f"update_notebook {key!r}", memory.notebook.update(key, text))

    _step(console, "2. Observations: memory_save adds one at a time to knowledge.md")
    _show(
        console,
        "memory_save fact",
        memory.knowledge.save(
            "The payments API allows 50 requests per second per key.", "fact", ["billing", "api"]
        ),
    )
    _show(
        console,
        "memory_save insight",
        memory.knowledge.save(
            "Retries without idempotency keys caused the double charges in March.",
            "insight",
            ["billing"],
        ),
    )
    _show(console, "memory_save empty", memory.knowledge.save("   "))
    _show(console, "memory_save array", memory.knowledge.save(["one", "two"]))

    _step(console, "3. Curated knowledge: memory_update writes a named section")
    _show(
        console,
        "memory_update conventions (replace)",
        memory.knowledge.update("conventions", "- Money is stored in integer cents."),
    )
    _show(
        console,
        "memory_update conventions (append)",
        memory.knowledge.update(
            "conventions", "- Every payment call carries an idempotency key.", mode="append"
        ),
    )

    _step(console, "4. A write over the cap is refused, and says why")
    too_long = "\n".join(
        f"- Billing incident {n}: a distinct post-mortem finding worth its own line, number {n}."
        for n in range(1, 41)
    )
    _show(
        console,
        f"memory_update incidents ({len(too_long)} chars)",
        memory.knowledge.update("incidents", too_long),
    )

    _step(console, "5. State: dated snapshots that expire after a week")
    _show(console, "state_update deploy", memory.state.set("deploy", "v2.1 rolling out: 60% done"))

    _step(console, "6. Search: keyword and semantic at once, offline, pointing at exact lines")
    question = "how fast may we call the payments API?"
    console.print(f"  memory_search {question!r}")
    for hit in memory.search(question, k=3):
        where = f"{hit.path}:{hit.line_start}-{hit.line_end}"
        console.print(f"    {where} [dim]({hit.kind})[/] {escape(hit.snippet)}", highlight=False)

    _step(console, "7. Consolidation: a dream merges duplicates and promotes themes, offline")
    for text, tags in [
        ("The payments API allows 50 requests per second for each key.", ["billing", "api"]),
        ("Deploys go out on Tuesdays and Thursdays only.", ["deploys"]),
        ("Every deploy needs a green staging run first.", ["deploys"]),
        ("Roll back a deploy with `make rollback`, never by hand.", ["deploys"]),
    ]:
        _show(console, "memory_save fact", memory.knowledge.save(text, "fact", tags))
    console.print("  memdir dream --force [dim](due by itself at 50 observations)[/]")
    dream = memory.dream(force=True)
    console.print(f"    {escape(dream.summary())}", highlight=False)
    for merged in dream.merged:
        console.print(f"    merged {len(merged['ids'])} into: {escape(merged['text'])}")
    for promoted in dream.promoted:
        console.print(f"    promoted {len(promoted['ids'])} into ## {promoted['section']}")
    console.print(f"    knowledge.md before the dream: [cyan]{dream.snapshot}[/]")

    _step(console, "8. The files (plain markdown: read them, edit them, commit them)")
    console.print(_tree(root))
    for store in (memory.notebook, memory.knowledge, memory.state):
        text = store.path.read_text(encoding="utf-8")
        console.print(Panel(Syntax(text, "markdown", word_wrap=True), title=store.relpath))

    _step(console, "9. What an agent would load into its prompt (memory.context())")
    ctx = memory.context(profile="default")
    table = Table("layer", "part", "tokens", "items", "left out")
    for layer in ctx.layers:
        table.add_row(layer.layer, layer.part, str(layer.tokens), str(layer.included),
                      str(layer.left_out))  # fmt: skip
    console.print(table)
    console.print(
        Panel(
            Syntax(ctx.live, "markdown", word_wrap=True),
            title=f"the live tail (the whole context: {ctx.tokens} of {ctx.budget} tokens)",
        )
    )
    console.print(
        "The stable part before it (identity, curated knowledge) stays the same turn to "
        "turn, for the prompt cache. Observations stay out (they are searched); evicted "
        f"entries are in [cyan]{memory.manifest.archive_dir()}/[/], never lost."
    )

    _step(console, "10. Connect an agent: the same tools over MCP")
    tools = Tools(memory)
    console.print(
        f"  {len(tools.names())} tools ({', '.join(tools.names()[:5])}, ...) with JSON schemas "
        "for OpenAI, Anthropic and MCP; memdir.tools.Tools(memory).call(name, args) runs one."
    )
    console.print(
        "  Claude Desktop: add this to claude_desktop_config.json (Claude Code: .mcp.json) "
        "and restart it; the agent's folder is created in "
        f"{escape(str(agents_dir()))}/ on first use:"
    )
    snippet = json.dumps(host_config(agent="assistant"), indent=2)
    console.print(snippet, markup=False, highlight=False, soft_wrap=True)  # copy-paste clean
    server = snippet_command(host_config(agent="assistant"))
    console.print(f"  Claude Code in one line: claude mcp add memdir -- {server}", highlight=False)
    console.print(
        "  Over HTTP: memdir serve --http --port 8765 (http://127.0.0.1:8765/mcp, and the web "
        "page at /ui)"
    )
    _step(console, "11. See it in a browser: memdir ui")
    console.print(
        f"  memdir ui --dir {escape(str(root))} serves this folder's page at "
        "http://127.0.0.1:8766/ui/ (overview, memory, search, vault graph, episodes, dreams); "
        "run the demo with --keep, or in a PATH, so the folder is still there to open.",
        highlight=False,
    )
    return memory


def snippet_command(config: dict[str, Any]) -> str:
    entry = config["mcpServers"]["memdir"]
    return " ".join([entry["command"], *entry["args"]])


def _step(console: Console, title: str) -> None:
    console.print()
    console.print(f"[bold]{title}[/]")


def _show(console: Console, call: str, result: WriteResult) -> None:
    mark = "[green]ok[/]" if result.ok else "[red]refused[/]"
    console.print(f"  {mark} {call} -> ", end="")
    console.print(json.dumps(result.to_dict(), ensure_ascii=False), markup=False, highlight=False)


def _tree(root: Path) -> Tree:
    tree = Tree(f"[bold]{root.name}/")

    def add(node: Tree, folder: Path) -> None:
        for child in sorted(folder.iterdir(), key=lambda p: (p.is_file(), p.name)):
            if child.name.startswith(".") and child.name != ".memdir":
                continue
            if child.is_dir():
                add(node.add(f"{child.name}/"), child)
            else:
                node.add(child.name)

    add(tree, root)
    return tree
