"""Claude's built-in memory tool (``memory_20250818``), run over a memory folder.

An application declares ``ANTHROPIC_MEMORY_TOOL`` in its Messages API call;
Claude then sends ``tool_use`` blocks named ``memory`` whose input has a
``command`` (view, create, str_replace, insert, delete, rename) and paths
under ``/memories``. ``run_memory_command(memory, block.input)`` runs one and
returns the text for the ``tool_result``: on success and on refusal alike, the
sentences Claude is trained on (Anthropic's memory tool documentation).
``MEMORY_TOOL`` is the same tool for the registry (``Tools.call``), so it can
also be offered to other models, or over MCP, as an ordinary tool.

``/memories`` is the memory folder (see ``claude_paths`` for what is confined
and read-only). Invariants of every change:
- Taken under the folder lock (and a mounted layer's own lock), re-reading the
  file under it; written atomically; the index follows in the same call.
- Checked first: the text Claude adds for credentials, the new content against
  the caps of the store that owns the file. A refusal leaves every file as it was.
- ``create`` never overwrites (Claude edits with str_replace and insert).
- ``delete`` loses nothing: the file or folder moves to
  ``archive/deleted/<date>/<path>``, searchable in deep mode.

On a folder kept in PostgreSQL the commands run through ``memory.files``
(``claude_files``), with the same answers and refusals.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memdir.files.sections import detect_newline
from memdir.stores.base import read_text, write_text
from memdir.tools import claude_files
from memdir.tools.claude_paths import (
    ROOT,
    Target,
    archive_path,
    check_caps,
    existing_file,
    files_under,
    listing,
    locked,
    refuse_file_in_the_way,
    refuse_read_only,
    refuse_secrets,
    target,
    touch_card,
)
from memdir.tools.registry import Tool, ToolCallError, Tools, ok

if TYPE_CHECKING:
    from memdir.memory import Memory

ANTHROPIC_MEMORY_TOOL: dict[str, str] = {"type": "memory_20250818", "name": "memory"}
"""The ``tools`` entry that turns on Claude's memory tool (no schema: Claude knows it)."""
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
REQUIRED: dict[str, tuple[str, ...]] = {
    "view": ("path",),
    "create": ("path", "file_text"),
    "str_replace": ("path", "old_str", "new_str"),
    "insert": ("path", "insert_line", "insert_text"),
    "delete": ("path",),
    "rename": ("old_path", "new_path"),
}
OPTIONAL: dict[str, tuple[str, ...]] = {"view": ("view_range",)}
MAX_LINES = 999_999
LINE_NUMBER_WIDTH = 6
SNIPPET_CONTEXT = 2


# -- the commands -------------------------------------------------------------------


def view(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    place = target(memory, args["path"])
    if memory.backend != "local":
        found = claude_files.view_text(memory, place)
        if found is None:
            return ok(place.store, content=claude_files.listing(memory, place))
        text = found
    else:
        if not place.real.exists():
            raise ToolCallError(
                f"The path {place.shown} does not exist. Please provide a valid path.",
                place.store,
            )
        if place.real.is_dir():
            return ok(place.store, content=listing(memory, place))
        touch_card(memory, place)
        text = place.real.read_bytes().decode("utf-8", "replace")
    lines = _lines(text)
    if len(lines) > MAX_LINES:
        raise ToolCallError(
            f"File {place.shown} exceeds maximum line limit of {MAX_LINES:,} lines.", place.store
        )
    first, last = _view_range(args.get("view_range"), len(lines), place)
    numbered = _numbered(lines, first, last)
    return ok(
        place.store, content=f"Here's the content of {place.shown} with line numbers:\n{numbered}"
    )


def create(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    place = target(memory, args["path"])
    text: str = args["file_text"]
    if str(args["path"]).strip().endswith("/") and not place.is_root:  # /memories/notes/
        raise ToolCallError(
            f"Error: The path {args['path'].strip()} names a folder; create writes a file, "
            f"such as {place.shown}/notes.md (folders are made for the files in them)",
            place.store,
        )
    if memory.backend != "local":
        claude_files.create(memory, place, text)
        return ok(place.store, content=f"File created successfully at: {place.shown}")
    with locked(memory, place):
        refuse_read_only(memory, place)
        if place.is_root or place.real.exists() or place.real.is_symlink():
            raise ToolCallError(f"Error: File {place.shown} already exists", place.store)
        refuse_secrets(place, text)
        check_caps(memory, place, text, None)
        refuse_file_in_the_way(place)
        write_text(place.real, text)
        memory.files_changed([(place.relpath, text)])
    return ok(place.store, content=f"File created successfully at: {place.shown}")


def str_replace(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    place = target(memory, args["path"])
    old: str = args["old_str"]
    new: str = args["new_str"]
    with locked(memory, place):
        refuse_read_only(memory, place)
        missing = f"Error: The path {place.shown} does not exist. Please provide a valid path."
        before = _existing(memory, place, missing)
        if not old:
            raise ToolCallError(
                "Error: old_str is empty; give the exact text to replace", place.store
            )
        count = before.count(old)
        if count == 0:
            raise ToolCallError(
                f"No replacement was performed, old_str `{old}` did not appear verbatim in "
                f"{place.shown}.",
                place.store,
            )
        if count > 1:
            where = ", ".join(str(n) for n in _occurrence_lines(before, old))
            raise ToolCallError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in "
                f"lines: {where}. Please ensure it is unique",
                place.store,
            )
        at = before.index(old)
        text = before[:at] + new + before[at + len(old) :]
        start = before.count("\n", 0, at)  # 0-based line where the change begins
        end = start + new.count("\n")
        lines = _lines(text)
        refuse_secrets(place, "\n".join(lines[start : end + 1]))  # the whole lines changed
        check_caps(memory, place, text, before)
        _write(memory, place, text, before)
    first = max(start - SNIPPET_CONTEXT, 0) + 1
    last = min(end + SNIPPET_CONTEXT + 1, len(lines))
    snippet = _numbered(lines, first, last)
    return ok(
        place.store,
        content="The memory file has been edited. Here is the snippet showing the change "
        f"(with line numbers):\n{snippet}",
    )


def insert(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    place = target(memory, args["path"])
    line: int = args["insert_line"]
    added: str = args["insert_text"]
    with locked(memory, place):
        refuse_read_only(memory, place)
        before = _existing(memory, place, f"Error: The file {place.shown} does not exist")
        lines = _lines(before)
        if line < 0 or line > len(lines):
            raise ToolCallError(
                f"Error: Invalid `insert_line` parameter: {line}. It should be within the "
                f"range of lines of the file: [0, {len(lines)}]",
                place.store,
            )
        refuse_secrets(place, added)
        newline = detect_newline(before)
        new_lines = added.removesuffix("\n").split("\n") if added else [""]
        joined = lines[:line] + [part.removesuffix("\r") for part in new_lines] + lines[line:]
        text = newline.join(joined) + newline
        check_caps(memory, place, text, before)
        _write(memory, place, text, before)
    return ok(place.store, content=f"The file {place.shown} has been edited.")


def delete(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    place = target(memory, args["path"])
    if place.is_root:
        raise ToolCallError(f"Error: Cannot delete the {ROOT} directory itself", place.store)
    if place.is_mount_root:
        raise ToolCallError(
            f"Error: {place.shown} is a layer mounted from another folder; delete the files "
            "in it instead",
            place.store,
        )
    if memory.backend != "local":
        return claude_files.delete(memory, place)
    with locked(memory, place):
        if not place.real.exists() and not place.real.is_symlink():
            raise ToolCallError(f"Error: The path {place.shown} does not exist", place.store)
        files = files_under(memory, place)
        for item in [place, *files]:
            refuse_read_only(memory, item)
        kept = archive_path(memory, place.relpath)
        destination = memory.root / kept
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(place.real, destination)
        moved = [(kept + item.relpath[len(place.relpath) :], item.relpath) for item in files]
        changes = [(old, "") for _, old in moved]
        changes += [
            (new, read_text(memory.root / new) or "")
            for new, _ in moved
            if memory.index.layer_of(new) is not None
        ]
        memory.files_changed(changes)
    return ok(place.store, content=f"Successfully deleted {place.shown}", archived_to=kept)


def rename(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    source = target(memory, args["old_path"])
    dest = target(memory, args["new_path"])
    for place in (source, dest):
        if place.is_root or place.is_mount_root:
            raise ToolCallError(
                f"Error: {place.shown} cannot be renamed or replaced: it is "
                + ("the memory folder itself" if place.is_root else "a mounted layer"),
                place.store,
            )
    if dest.relpath.startswith(source.relpath + "/"):
        raise ToolCallError(
            f"Error: Cannot move {source.shown} into itself ({dest.shown})", source.store
        )
    if memory.backend != "local":
        claude_files.rename(memory, source, dest)
        return ok(
            dest.store,
            content=f"Successfully renamed {source.shown} to {dest.shown}",
            moved_from=source.relpath,
        )
    with locked(memory, source, dest):
        refuse_read_only(memory, source)
        refuse_read_only(memory, dest)
        if not source.real.exists() and not source.real.is_symlink():
            raise ToolCallError(f"Error: The path {source.shown} does not exist", source.store)
        if dest.real.exists() or dest.real.is_symlink():
            raise ToolCallError(f"Error: The destination {dest.shown} already exists", dest.store)
        files = files_under(memory, source)
        moves: list[tuple[Target, Target, str]] = []
        for item in files:
            landing = target(memory, dest.shown + item.shown[len(source.shown) :])
            refuse_read_only(memory, item)
            refuse_read_only(memory, landing)
            text = read_text(item.real) or ""
            check_caps(memory, landing, text, None)
            moves.append((item, landing, text))
        refuse_file_in_the_way(dest)
        dest.real.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(source.real, dest.real)
        changes = [(item.relpath, "") for item, _, _ in moves]
        changes += [(landing.relpath, text) for _, landing, text in moves]
        memory.files_changed(changes)
    return ok(
        dest.store,
        content=f"Successfully renamed {source.shown} to {dest.shown}",
        moved_from=source.relpath,
    )


HANDLERS = {
    "view": view,
    "create": create,
    "str_replace": str_replace,
    "insert": insert,
    "delete": delete,
    "rename": rename,
}


def memory_command(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    """The registry handler: check the command's own arguments, then run it."""
    command = args["command"]
    missing = [name for name in REQUIRED[command] if args.get(name) is None]
    if missing:
        raise ToolCallError(
            f"Error: Missing required parameter `{missing[0]}` for command `{command}` (it "
            f"takes {', '.join(REQUIRED[command])})"
        )
    takes = ("command", *REQUIRED[command], *OPTIONAL.get(command, ()))
    stray = [name for name, value in args.items() if value is not None and name not in takes]
    if stray:  # the command would run without it, as if it held
        raise ToolCallError(
            f"Error: `{stray[0]}` is not a parameter of command `{command}` (it takes "
            f"{', '.join(takes[1:])}); nothing was done"
        )
    try:
        return HANDLERS[command](memory, args)
    except (OSError, UnicodeError) as exc:
        raise ToolCallError(
            f"Error: {command} failed on the file system ({type(exc).__name__}: {exc}); "
            "nothing was left half-written"
        ) from exc


def run_memory_command(memory: Memory, input: Mapping[str, Any] | Any) -> str:
    """Run one of Claude's memory tool calls (a ``tool_use`` block's ``input``) and return
    the text for its ``tool_result``: the result, or the refusal Claude can act on.
    ``input`` may also be an anthropic SDK command model (it has ``model_dump``)."""
    if not isinstance(input, Mapping) and hasattr(input, "model_dump"):
        input = input.model_dump(exclude_none=True)
    result = Tools(memory, [MEMORY_TOOL]).call(MEMORY_TOOL.name, input)
    return str(result["content"] if result["ok"] else result["reason"])


# -- helpers --------------------------------------------------------------------------


def _existing(memory: Memory, place: Target, missing: str) -> str:
    if memory.backend != "local":
        return claude_files.read(memory, place, missing)
    return existing_file(place, missing)


def _write(memory: Memory, place: Target, text: str, before: str) -> None:
    if memory.backend != "local":
        claude_files.write(memory, place, text, before)
        return
    if text != before:
        write_text(place.real, text)
        memory.files_changed([(place.relpath, text)])


def _lines(text: str) -> list[str]:
    """Lines as Claude counts them: a final newline ends the last line, adds none."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _numbered(lines: list[str], first: int, last: int) -> str:
    return "\n".join(
        f"{number:>{LINE_NUMBER_WIDTH}}\t{lines[number - 1]}" for number in range(first, last + 1)
    )


def _view_range(raw: list[int] | None, total: int, place: Target) -> tuple[int, int]:
    if raw is None:
        return 1, total
    first, last = raw  # the schema holds it to two integers
    if total == 0 and first == 1 and last in (-1, 0):
        return 1, 0
    if not 1 <= first <= total:
        raise ToolCallError(
            f"Error: Invalid `view_range` parameter: {raw}. Its first element `{first}` should "
            f"be within the range of lines of the file: [1, {total}]",
            place.store,
        )
    if last == -1:
        return first, total
    if last < first:
        raise ToolCallError(
            f"Error: Invalid `view_range` parameter: {raw}. Its second element `{last}` should "
            f"be larger or equal than its first `{first}`",
            place.store,
        )
    return first, min(last, total)


def _occurrence_lines(text: str, needle: str) -> list[int]:
    """The lines where ``needle`` starts, each once."""
    found: list[int] = []
    at = text.find(needle)
    while at != -1:
        line = text.count("\n", 0, at) + 1
        if line not in found:
            found.append(line)
        at = text.find(needle, at + 1)
    return found


# -- the tool ---------------------------------------------------------------------------


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


MEMORY_TOOL = Tool(
    name="memory",
    title="Memory files",
    description=(
        "Your long-term memory: a folder of files at /memories that outlasts this "
        "conversation. Before a task, view /memories and read what is relevant; as you "
        "work, record what you learn (progress, decisions, facts about the user) so a later "
        "session can pick up where you stopped. Commands: view (a folder up to 2 levels deep, "
        "or a file with line numbers; view_range [first, last] with -1 for the end), create "
        "(a new file; never overwrites), str_replace (old_str must appear exactly once), "
        "insert (insert_text after line insert_line; 0 puts it first), delete (kept in the "
        "archive), rename (old_path to new_path; never overwrites). Every path starts with "
        "/memories. knowledge.md and NOTEBOOK.md are capped (a write over a cap is refused "
        "with the reason); the manifest, archive/ and sessions/ are read-only. Never store "
        "credentials."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "enum": list(COMMANDS),
                "description": "What to do: " + ", ".join(COMMANDS) + ".",
            },
            "path": _string("The file or folder, such as /memories/notes/project.md."),
            "view_range": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 2,
                "maxItems": 2,
                "description": "view: [first, last] line (1-based, inclusive; -1 for the end).",
            },
            "file_text": _string("create: the new file's whole text."),
            "old_str": _string("str_replace: the text to replace, exactly as in the file."),
            "new_str": _string("str_replace: the text to put in its place ('' deletes it)."),
            "insert_line": {
                "type": "integer",
                "description": "insert: the line after which to insert (0: at the top).",
            },
            "insert_text": _string("insert: the text to insert."),
            "old_path": _string("rename: the file or folder to move."),
            "new_path": _string("rename: where to move it (must not exist yet)."),
        },
        "required": ["command"],
    },
    handler=memory_command,
    destructive=True,
)
