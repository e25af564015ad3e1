"""The agent tools: one definition each, exported in every schema shape, one dispatcher.

A ``Tool`` is a name, a description written for a model, a JSON Schema for
its arguments (and for its result: MCP's ``outputSchema``), MCP-style hints
(read-only, destructive, idempotent) and a handler over the Python API.
``Tools`` binds the definitions to one ``Memory`` and keeps those the folder's
manifest can serve (no vault tools without a vault layer). Of those it offers a
model the set the manifest's ``[tools]`` table picks: by default the compact set
(the tools a model needs, each with its common arguments: schemas are sent on
every turn, so they are kept under ``COMPACT_BUDGET_TOKENS`` for the default
layout), or ``offer = "all"``, adjusted by ``include`` and ``exclude``. It
exports them as OpenAI function-calling schemas, Anthropic tool schemas or MCP
tool listings: the one definition, three shapes.

Offering is not serving: ``Tools.call`` runs any tool the folder can serve,
offered or not, legacy aliases included (a model trained on an older list may
still call one), and checks every call against the full argument schema, so an
argument the compact schema leaves out is still accepted.

``Tools.call(name, arguments)`` never raises into the model. Arguments are
checked against the schema first; a bad argument, a refusal from a store, an
unknown tool or an internal error all come back as
``{ok: false, status: "error", reason}`` with a sentence a model can act on.
Every result names the file it is about (``store``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdir.errors import MemdirError
from memdir.files.encoding import clean
from memdir.safety.provenance import writing_as
from memdir.tools.argcheck import plainly_valid

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from memdir.config import Manifest
    from memdir.memory import Memory

log = logging.getLogger("memdir.tools")

Handler = Callable[["Memory", dict[str, Any]], dict[str, Any]]


CHECKED_BOUNDS = ("minLength", "minimum", "maximum")
"""argument bounds the compact schemas leave out: the dispatcher checks them on each call"""


@dataclass(frozen=True)
class Tool:
    """One agent tool: what a model sees, and the handler that runs it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """a JSON Schema of type object"""
    handler: Handler = field(repr=False)
    title: str = ""
    read_only: bool = False
    destructive: bool = False
    """it may remove or overwrite what is there (removed text still goes to an archive)"""
    idempotent: bool = False
    requires: tuple[str, ...] = ()
    """store kinds, one of which the manifest must declare for the tool to be offered"""
    store: Callable[[Memory], str] | None = field(default=None, repr=False)
    """the file an error result names, when the tool has one"""
    alias_of: str | None = None
    """a legacy name from the notebook specification, kept for older prompts"""
    output: Mapping[str, Any] | None = field(default=None, repr=False)
    """a JSON Schema of the result (MCP ``outputSchema``): refusals included"""
    compact: bool | tuple[str, ...] = True
    """in the compact set: always (True), never (False: offered with ``offer = "all"`` or
    ``include`` only), or where the manifest declares one of these store kinds"""
    brief: Mapping[str, Any] | None = field(default=None, repr=False)
    """the argument schema the compact set offers, when it leaves out arguments that are
    rarely right (``parameters`` still checks every call); None: ``parameters``"""

    def schema(self, *, compact: bool = False) -> dict[str, Any]:
        """The argument schema as a plain dict (a copy callers may change); ``compact``:
        the one the compact set offers, ``brief`` without the bounds the call is checked
        against anyway (a call out of them is refused with a sentence saying so)."""
        chosen = self.brief if compact and self.brief is not None else self.parameters
        copied: dict[str, Any] = json.loads(json.dumps(chosen))
        if compact:
            for spec in copied.get("properties", {}).values():
                for bound in CHECKED_BOUNDS:
                    spec.pop(bound, None)
        return copied

    def output_schema(self) -> dict[str, Any] | None:
        """The result's JSON Schema as a plain dict, or None if it declares none."""
        if self.output is None:
            return None
        copied: dict[str, Any] = json.loads(json.dumps(self.output))
        return copied

    def openai(self, *, compact: bool = False) -> dict[str, Any]:
        """OpenAI function-calling shape (Chat Completions ``tools`` entry)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.schema(compact=compact),
            },
        }

    def anthropic(self, *, compact: bool = False) -> dict[str, Any]:
        """Anthropic Messages API ``tools`` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.schema(compact=compact),
        }

    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations (hints for the host, not guarantees)."""
        return {
            "title": self.title or self.name.replace("_", " "),
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }

    def mcp(self, *, compact: bool = False) -> dict[str, Any]:
        """MCP ``tools/list`` entry, with ``outputSchema`` where the result declares one."""
        entry = {
            "name": self.name,
            "title": self.title or None,
            "description": self.description,
            "inputSchema": self.schema(compact=compact),
            "annotations": self.annotations(),
        }
        if self.output is not None:
            entry["outputSchema"] = self.output_schema()
        return entry


class ToolCallError(Exception):
    """Raised inside a handler for a refusal that is not a store's WriteResult."""

    def __init__(self, reason: str, store: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.store = store


def error(reason: str, store: str | None = None) -> dict[str, Any]:
    """The structured refusal every tool returns."""
    result: dict[str, Any] = {"ok": False, "status": "error", "reason": reason}
    if store is not None:
        result["store"] = store
    return result


def ok(store: str, **fields: Any) -> dict[str, Any]:
    """A success naming the file it touched."""
    return {"ok": True, "status": "ok", "store": store, **fields}


COMPACT_BUDGET_TOKENS = 1500
"""the most the default layout's compact set may spend on schemas, in the Anthropic shape
(bytes / 4, as the context counts): a test fails when the set grows past it"""

OFFERS = ("compact", "all")


class Tools:
    """The tools one memory folder serves, the ones it offers a model, and the dispatcher."""

    def __init__(
        self,
        memory: Memory,
        definitions: Iterable[Tool] | None = None,
        *,
        offer: str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
    ) -> None:
        """``offer``, ``include`` and ``exclude`` default to the manifest's ``[tools]``."""
        if definitions is None:
            from memdir.tools.catalog import TOOLS

            definitions = TOOLS
        self.memory = memory
        self._all = served(memory.manifest, definitions)
        settings = memory.manifest.tools
        self.offer = settings.offer if offer is None else offer
        if self.offer not in OFFERS:
            raise ValueError(f"offer must be one of {', '.join(OFFERS)}, not {self.offer!r}")
        self._offered = offered(
            memory.manifest,
            self._all.values(),
            self.offer,
            settings.include if include is None else include,
            settings.exclude if exclude is None else exclude,
        )
        self._validators: dict[str, Any] = {}  # each tool's, made at its first call

    def __contains__(self, name: object) -> bool:
        return name in self._all

    def __iter__(self) -> Any:
        return iter(self.available())

    def get(self, name: str) -> Tool | None:
        """Any tool this folder serves, offered or not (``call`` runs each of them)."""
        return self._all.get(name)

    def available(self, *, legacy: bool = False) -> list[Tool]:
        """The tools to offer a model (the manifest's ``[tools]``). ``legacy``: every tool
        this folder serves, legacy aliases included, as memdir offered them before
        ``[tools]`` (what ``call`` runs; ``memdir serve --legacy-tools``)."""
        if legacy:
            return list(self._all.values())
        return list(self._offered)

    def _briefly(self, legacy: bool) -> bool:
        return self.offer == "compact" and not legacy

    def names(self, *, legacy: bool = False) -> list[str]:
        return [t.name for t in self.available(legacy=legacy)]

    def openai(self, *, legacy: bool = False) -> list[dict[str, Any]]:
        compact = self._briefly(legacy)
        return [t.openai(compact=compact) for t in self.available(legacy=legacy)]

    def anthropic(self, *, legacy: bool = False) -> list[dict[str, Any]]:
        compact = self._briefly(legacy)
        return [t.anthropic(compact=compact) for t in self.available(legacy=legacy)]

    def mcp(self, *, legacy: bool = False) -> list[dict[str, Any]]:
        compact = self._briefly(legacy)
        return [t.mcp(compact=compact) for t in self.available(legacy=legacy)]

    # -- dispatch ---------------------------------------------------------------

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        writer: str = "agent",
    ) -> dict[str, Any]:
        """Run one tool call; never raises (see the module docstring). A refused write,
        and one saved but flagged as instructions, is also recorded in the activity
        history (``record_refusal``, ``record_flagged``). What it writes records ``by:
        writer`` (``person`` from the web page: the same checks, another writer)."""
        tool = self._all.get(name) if isinstance(name, str) else None
        if tool is None:
            return error(self._unknown(name))
        with writing_as(writer):
            result = self._run(tool, arguments)
        if isinstance(result.get("reason"), str):  # it may quote a lone surrogate sent
            result["reason"] = clean(result["reason"])  # to it: no UTF-8 for a client or log
        if not result.get("ok", False) and not tool.read_only:
            record_refusal(self.memory, tool.name, result)
        elif result.get("warnings"):
            record_flagged(self.memory, tool.name, result)
        return result

    def _run(self, tool: Tool, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        store = self._store(tool)
        try:
            args = _arguments(arguments)
            if isinstance(args, str):
                return error(f"{tool.name}: {args}", store)
            problem = self._check(tool, args)
        except RecursionError:
            return error(f"{tool.name}: {_TOO_DEEP}", store)
        if problem is not None:
            return error(f"{tool.name}: {problem}", store)
        try:
            return tool.handler(self.memory, args)
        except RecursionError:
            return error(f"{tool.name}: {_TOO_DEEP}", store)
        except ToolCallError as refusal:
            return error(refusal.reason, refusal.store or store)
        except (MemdirError, ValueError, LookupError) as exc:
            return error(f"{tool.name}: {exc}", store)
        except Exception as exc:  # the model must get a sentence, never a traceback
            log.exception("tool %s failed", tool.name)
            return error(
                f"{tool.name} failed inside memdir ({type(exc).__name__}: {exc}). No file was "
                "left half-written; try again, and report it if it keeps happening.",
                store,
            )

    def _store(self, tool: Tool) -> str | None:
        if tool.store is None:
            return None
        try:
            return tool.store(self.memory)
        except MemdirError:
            return None

    def _unknown(self, name: object) -> str:
        offered = ", ".join(self.names())
        if not isinstance(name, str) or not name:
            return f"name the tool to call; this memory offers: {offered}"
        return f"there is no tool named {name!r} here; this memory offers: {offered}"

    def _check(self, tool: Tool, args: dict[str, Any]) -> str | None:
        if plainly_valid(tool.parameters, args):
            return None  # most calls: no validator needed to tell
        validator = self._validators.get(tool.name)
        if validator is None:
            from jsonschema import Draft202012Validator

            validator = self._validators[tool.name] = Draft202012Validator(tool.parameters)
        found = sorted(validator.iter_errors(args), key=_depth)
        if not found:
            return None
        sentences = list(dict.fromkeys(_sentence(tool, e) for e in found))
        return "; ".join(sentences[:3])


def served(manifest: Manifest, definitions: Iterable[Tool]) -> dict[str, Tool]:
    """The tools a folder with this manifest can run, by name, in the given order."""
    found: dict[str, Tool] = {}
    for tool in definitions:
        if tool.name in found:
            raise ValueError(f"two tools are named {tool.name!r}")
        if _serves(manifest, tool.requires):
            found[tool.name] = tool
    return found


def offered(
    manifest: Manifest,
    tools: Iterable[Tool],
    offer: str = "compact",
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
) -> list[Tool]:
    """Of the ``tools`` served, those to offer: the compact set (or every primary tool),
    plus ``include``, less ``exclude``, in their order. A name the folder cannot serve is
    skipped (the manifest's own lists are checked when it is read)."""
    wanted, unwanted = set(include), set(exclude)
    chosen = []
    for tool in tools:
        if tool.name in unwanted:
            continue
        if tool.name in wanted or (
            tool.alias_of is None and (offer == "all" or _compact(manifest, tool))
        ):
            chosen.append(tool)
    return chosen


def _compact(manifest: Manifest, tool: Tool) -> bool:
    if isinstance(tool.compact, bool):
        return tool.compact
    return _serves(manifest, tool.compact)


def _serves(manifest: Manifest, kinds: tuple[str, ...]) -> bool:
    """True if the manifest declares one of the store ``kinds`` (or none is needed)."""
    return not kinds or any(manifest.serves(kind) for kind in kinds)


MAX_ARGUMENT_CHARS = 1_000_000
"""the most a tool call's arguments may hold, as JSON text: far above any cap of a store"""
_TOO_DEEP = "the arguments are nested too deeply to read; send a flat JSON object"


def _arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """The arguments as a dict; OpenAI hands them over as a JSON string."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        if len(arguments) > MAX_ARGUMENT_CHARS:
            return (
                f"the arguments are {len(arguments):,} characters; a tool call takes at most "
                f"{MAX_ARGUMENT_CHARS:,}. Save one short memory at a time"
            )
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(arguments, Mapping):
        return f"the arguments must be a JSON object, not {_kind(arguments)}"
    size = _chars(arguments)
    if size > MAX_ARGUMENT_CHARS:  # as an object (MCP, Python): the same cap as JSON text
        return (
            f"the arguments hold over {MAX_ARGUMENT_CHARS:,} characters; a tool call takes at "
            f"most {MAX_ARGUMENT_CHARS:,}. Save one short memory at a time"
        )
    return dict(arguments)


def _chars(arguments: Mapping[str, Any]) -> int:
    """About the characters ``arguments`` take as JSON (each string's length, 1 for any
    other value), counted without recursion and no further than past the cap."""
    total, stack = 0, [arguments]
    while stack and total <= MAX_ARGUMENT_CHARS:
        value = stack.pop()
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                total += len(key) if isinstance(key, str) else 1
                stack.append(item)
        elif isinstance(value, (list, tuple)):
            total += 1
            stack.extend(value)
        else:
            total += 1
    return total


def record_refusal(memory: Memory, tool: str, result: Mapping[str, Any]) -> str | None:
    """Put a refused write in the activity history (the notebook specification, 8.8: a
    refusal is surfaced to the activity log, never a silent no-op): an ``internal``
    activity, failed, whose one ``error`` log holds the reason and the file. Returns its
    id, or None where there is no history to write (none declared, a read-only folder,
    a full disk): recording never turns a refusal into a crash."""
    reason = str(result.get("reason") or "refused").removeprefix(f"{tool}: ")
    return _record(memory, tool, "refused", reason, success=False, store=result.get("store"))


def record_flagged(memory: Memory, tool: str, result: Mapping[str, Any]) -> str | None:
    """Put a write the poisoning check flagged in the activity history (it succeeded:
    the text is saved, flagged, and quoted in the context), for whoever audits it."""
    warning = "; ".join(str(w) for w in result.get("warnings") or ())
    return _record(memory, tool, "flagged", warning, success=True, store=result.get("store"))


def _record(
    memory: Memory, tool: str, what: str, text: str, *, success: bool, store: object
) -> str | None:
    if memory.read_only is not None or not memory.has("history"):
        return None
    try:
        history = memory.history
        activity = history.start_activity("internal", f"{tool} {what}")
        kind = "error" if not success else "status"
        history.log(activity, kind, text, {"tool": tool, "store": store})
        history.end_activity(
            activity, summary=f"{tool} was {what}: {text}", keywords=[tool], success=success
        )
    except Exception as exc:  # a history that cannot be written must not hide the result
        log.warning("could not record in the history that %s was %s: %s", tool, what, exc)
        return None
    return activity


def _depth(error: ValidationError) -> tuple[int, str]:
    return (len(error.absolute_path), str(error.message))


_TYPE_WORDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)}"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string"


def _sentence(tool: Tool, e: ValidationError) -> str:
    """A ValidationError as a sentence a model can act on."""
    where = ".".join(str(part) for part in e.absolute_path) or "the arguments"
    props = tool.parameters.get("properties", {})
    if e.validator == "required":
        missing = e.message.split("'")[1] if "'" in e.message else e.message
        hint = props.get(missing, {}).get("description", "")
        return f"{missing!s} is required" + (f" ({hint.rstrip('.')})" if hint else "")
    if e.validator == "additionalProperties":
        extra = sorted(set(e.instance) - set(props)) if isinstance(e.instance, dict) else []
        return (
            f"unknown argument{'s' if len(extra) != 1 else ''} {', '.join(extra)}; "
            f"{tool.name} takes {', '.join(props) or 'no arguments'}"
        )
    if e.validator == "type":
        wanted = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
        words = " or ".join(_TYPE_WORDS.get(str(w), str(w)) for w in wanted)
        sentence = f"{where} must be {words}, not {_kind(e.instance)}"
        if isinstance(e.instance, (list, tuple)) and "array" not in wanted:
            sentence += f"; {tool.name} takes one at a time, so call it once per item"
        return sentence
    if e.validator == "enum":
        options = ", ".join(repr(v) for v in list(e.validator_value or ()))  # type: ignore[arg-type]
        return f"{where} must be one of {options}, not {e.instance!r}"
    if e.validator == "minLength":
        return f"{where} is empty; give it some text"
    if e.validator in ("minimum", "exclusiveMinimum"):
        return f"{where} must be at least {e.validator_value}, not {e.instance!r}"
    if e.validator in ("maximum", "exclusiveMaximum"):
        return f"{where} must be at most {e.validator_value}, not {e.instance!r}"
    if e.validator == "minItems":
        return f"{where} needs at least {e.validator_value} item(s)"
    if e.validator == "maxItems":
        return f"{where} takes at most {e.validator_value} item(s)"
    return f"{where}: {e.message}"
