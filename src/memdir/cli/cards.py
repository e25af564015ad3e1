"""Vault cards from the command line: ``memdir card write|show|list|links|history``.

Each subcommand is one call on ``memory.vault`` (the same the card tools make):
``write`` is ``vault.write``, ``show`` is ``vault.read`` (reading a card through
memdir touches it, as the vault specification says; ``--no-touch`` reads
without), ``history`` is ``vault.append_history`` or the card's ``## History``
lines. ``list``, ``links`` and ``history`` without TEXT never touch a card.
A folder without a vault layer says what serves instead (``_common.opened``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from memdir.cli._common import (
    VAULT,
    AgentOption,
    FolderOption,
    JsonOption,
    command_group,
    console,
    errors,
    fail,
    opened,
    optional_argument,
    print_json,
    read_text,
    reports_errors,
    write_once,
)
from memdir.files.cards import CARD_TYPES
from memdir.tiers import TIERS

if TYPE_CHECKING:
    from memdir.stores.vault import CardInfo, CardRead, VaultStore

card_app = command_group(
    "card",
    VAULT,
    "Vault cards, one per person, project, company or idea: write, show, list, links, history.",
    no_args_is_help=True,
)

CardArgument = Annotated[
    str, typer.Argument(metavar="CARD", help="The card: its path, file name or title.")
]


def _fields(values: list[str] | None) -> dict[str, Any] | None:
    """``--field KEY=VALUE`` pairs; each VALUE is read as YAML, as if written in the
    frontmatter (``3`` a number, ``[a, b]`` a list, ``2026-11-30`` a date)."""
    import yaml

    if not values:
        return None
    fields: dict[str, Any] = {}
    for pair in values:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(
                f"{pair!r} is not KEY=VALUE (such as --field company=acme-corp)",
                param_hint="'--field'",
            )
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        fields[key.strip()] = raw if value is None or isinstance(value, dict) else value
    return fields


def _found(vault: VaultStore, ref: str) -> str:
    from memdir.stores.vault import ref_problem

    problem = ref_problem(ref)
    if problem is not None:
        fail(problem)
    path = vault.resolve(ref)
    if path is None:
        fail(f"no card {ref!r} in the vault; memdir card list shows the cards there are")
    assert path is not None
    return path


def _read(vault: VaultStore, ref: str, *, touch: bool) -> CardRead:
    """The card ``ref`` names, read (and touched, if ``touch``), or exit with the reason."""
    read = vault.read(_found(vault, ref), touch=touch)
    if read is None:  # removed between resolving and reading
        fail(f"no card {ref!r} in the vault")
    assert read is not None
    return read


def _info(info: CardInfo) -> dict[str, Any]:
    return {
        "path": info.path,
        "name": info.name,
        "title": info.title,
        "type": info.type,
        "tags": list(info.tags),
        "tier": info.tier,
        "relevance": info.relevance,
        "last_accessed": info.last_accessed.isoformat() if info.last_accessed else None,
        "access_count": info.access_count,
        "links": list(info.links),
    }


@card_app.command("write")
@reports_errors
def card_write(
    title: Annotated[
        str,
        typer.Argument(
            metavar="TITLE",
            help="The card's title or name ('Alice Moreau', 'crm/alice-moreau'); an existing "
            "card is updated.",
        ),
    ],
    text: Annotated[
        str | None,
        optional_argument(
            "TEXT",
            "The card's text (markdown); - reads it from stdin. Left out: a new card "
            "has its title only, an existing one keeps its text.",
        ),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--type",
            "-t",
            metavar="TYPE",
            help=f"What it is: {', '.join(CARD_TYPES)} (a new card: other).",
            show_default=False,
        ),
    ] = None,
    card_folder: Annotated[
        str | None,
        typer.Option(
            "--folder",
            metavar="FOLDER",
            help="The vault folder for a new card, such as crm/clients (an existing "
            "card's own, or none).",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", metavar="TAG", help="A tag (repeatable); given, they replace the card's tags."
        ),
    ] = None,
    link: Annotated[
        list[str] | None,
        typer.Option(
            "--link",
            metavar="CARD",
            help="A related card's name (repeatable); given, they replace the links field.",
        ),
    ] = None,
    field: Annotated[
        list[str] | None,
        typer.Option(
            "--field",
            metavar="KEY=VALUE",
            help="Another frontmatter field (repeatable); VALUE is read as YAML.",
        ),
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a vault card, or update one (card_write): the fields and text given replace
    the old ones; its ## History is always kept."""
    fields = _fields(field)
    body = read_text(text) if text is not None else None  # stdin before the folder lock
    write_once(
        folder,
        agent,
        as_json,
        lambda memory: memory.vault.write(
            title, body, type=kind, tags=tag, links=link, folder=card_folder, fields=fields
        ),
        lambda result: [f"{result.action.capitalize()} card {result.key}.", *result.notes],
    )


@card_app.command("show")
@reports_errors
def card_show(
    card: CardArgument,
    no_touch: Annotated[
        bool, typer.Option("--no-touch", help="Read it without marking it recalled.")
    ] = False,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a card (card_read); reading it marks it recalled: one tier up, last_accessed
    today."""
    from memdir.tools.schema import json_safe

    with opened(folder, agent) as memory:
        read = _read(memory.vault, card, touch=not no_touch)
    if as_json:
        meta = json_safe(read.meta)
        print_json({"path": read.path, "meta": meta, "body": read.body, "touched": read.touched})
        return
    typer.echo(read.text, nl=not read.text.endswith("\n"))


@card_app.command("list")
@reports_errors
def card_list(
    kind: Annotated[
        str | None,
        typer.Option("--type", "-t", metavar="TYPE", help="Only cards of this type."),
    ] = None,
    tier: Annotated[
        str | None,
        typer.Option(
            "--tier", metavar="TIER", help=f"Only cards in this tier: {', '.join(TIERS)}."
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", metavar="TAG", help="Only cards with one of these tags (repeatable)."
        ),
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the cards, most relevant first, without touching any."""
    if tier is not None and tier not in TIERS:
        raise typer.BadParameter(f"choose one of {', '.join(TIERS)}", param_hint="'--tier'")
    with opened(folder, agent) as memory:
        cards = memory.vault.cards()
        unreadable = memory.vault.unreadable()
    chosen = [
        info
        for info in cards
        if (kind is None or info.type == kind)
        and (tier is None or info.tier == tier)
        and (not tag or set(tag) & set(info.tags))
    ]
    chosen.sort(key=lambda info: (TIERS.index(info.tier), -info.relevance, info.path))
    for path, why in unreadable:
        errors.print(f"skipped {escape(path)}: {escape(why)}")
    if as_json:
        print_json([_info(info) for info in chosen])
        return
    if not chosen:
        console.print("No cards." if not cards else f"No cards of the {len(cards)} match.")
        return
    for info in chosen:
        tags = f" [{', '.join(info.tags)}]" if info.tags else ""
        console.print(
            f"[cyan]{escape(info.path)}[/] [bold]{escape(info.title)}[/] "
            f"({escape(info.type)}, {info.tier}, relevance {info.relevance:.2f}){escape(tags)}"
        )


@card_app.command("links")
@reports_errors
def card_links(
    card: CardArgument,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """A card's links, the cards that link to it (backlinks), and links that lead nowhere."""
    from memdir.maintain.graph import build_graph

    with opened(folder, agent) as memory:
        path = _found(memory.vault, card)
        graph = build_graph(memory.vault)  # derived, saved nowhere: this command only reads
    data = {
        "card": path,
        "links": graph.links.get(path, []),
        "backlinks": graph.backlinks.get(path, []),
        "broken": graph.broken.get(path, []),
    }
    if as_json:
        print_json(data)
        return
    console.print(path, markup=False)
    for name in ("links", "backlinks", "broken"):
        console.print(f"  {name}: {', '.join(data[name]) or 'none'}", markup=False)


@card_app.command("history")
@reports_errors
def card_history(
    card: CardArgument,
    text: Annotated[
        str | None,
        optional_argument(
            "TEXT",
            "A line to add (card_history); - reads it from stdin. Left out: show the History.",
        ),
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a card's ## History, or add a dated line to it (append-only)."""
    from memdir.files.cards import Card
    from memdir.files.sections import SectionDocument
    from memdir.stores.vault import HISTORY

    if text is not None:
        line = read_text(text)
        write_once(
            folder,
            agent,
            as_json,
            lambda memory: memory.vault.append_history(card, line),
            lambda result: [f"Added to the history of {result.key}.", *result.notes],
        )
        return
    with opened(folder, agent) as memory:
        read = _read(memory.vault, card, touch=False)
    section = SectionDocument.parse(Card.parse(read.text).body).get(HISTORY)
    history = [line for line in (section.body if section else "").splitlines() if line.strip()]
    if as_json:
        print_json({"card": read.path, "history": history})
        return
    if not history:
        console.print(f"{read.path}: no history yet.", markup=False)
    for entry in history:
        console.print(entry, markup=False)
