"""The page's ASGI app: routes, the guard in front of each, templates, static files.

Server-rendered pages over the Python API (Starlette, Jinja2 with autoescape). Each
view is a plain function ``(ui, request, form) -> Response`` in its module
(``overview``, ``working``, ``search``, ``vault``, ``episodes``, ``consolidation``,
``history``, ``files``); it runs in a worker thread, one at a time for the folder
(``UI.lock``), and reads what it shows from the files on each request, so an agent
writing at the same moment is seen at the next load. Writes go through the agent
tools (``memdir.tools.Tools``) or the library's restore, so caps, the secret check and
refusals are the tools' own. The pages work without JavaScript; ``graph.js``
only lets the vault's graph be moved around.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from importlib import resources
from typing import Any, Generic, Protocol, TypeVar, cast
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

from memdir.aio import AsyncMemory
from memdir.memory import Memory, open_memory
from memdir.results import WriteResult
from memdir.tools import Tools
from memdir.ui import svg
from memdir.ui.guard import COOKIE, Guard
from memdir.ui.listing import Survey, fingerprint, survey

PREFIX = "/ui"
FORM_MAX_BYTES = 8 * 1024 * 1024  # a form's body; the tools' own caps are far smaller
FORM_TYPE = "application/x-www-form-urlencoded"  # what the page's forms send
T = TypeVar("T")
View = Callable[["UI", Request, FormData | None], Response]
Run = Callable[[Callable[[], Response]], Awaitable[Response]]


class Back(Protocol):
    """The page a write returns to when it is refused before it runs."""

    def __call__(
        self, ui: UI, request: Request, form: FormData | None, *, refusal: str | None, status: int
    ) -> Response: ...


STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".txt": "text/plain"}
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
NAV = (
    ("overview", "", "Overview"),
    ("memory", "/memory", "Memory"),
    ("search", "/search", "Search"),
    ("vault", "/vault", "Vault"),
    ("episodes", "/episodes", "Episodes"),
    ("consolidation", "/consolidation", "Consolidation"),
    ("history", "/history", "History"),
)


@dataclass(frozen=True)
class Later(Generic[T]):
    """What ``UI.soon`` has: done or not yet, the value (or the one from before), why not."""

    ready: bool
    value: T | None
    error: str | None = None


class UI:
    """One memory folder's pages."""

    def __init__(
        self,
        memory: Memory,
        *,
        token: str | None = None,
        hosts: tuple[str, ...] | None = None,
        prefix: str = PREFIX,
        guard: Guard | None = None,
        amemory: AsyncMemory | None = None,
        run: Run | None = None,
        reopen: Callable[[], Memory] | None = None,
        read_only: str | None = None,
    ) -> None:
        """``guard``: who may see and write (``Guard(token, hosts=)`` by default).
        ``amemory``: the folder's worker, when a server has one already; ``run``: how a
        view is run on it (``amemory.run`` by default; a server may run it in turn with
        its own calls). ``reopen``: the folder opened anew, for work done beside the
        page (doctor); ``open_memory(root)`` by default. ``read_only``: why every edit
        is refused here (a read-only token), or None."""
        self.memory = memory
        self.amemory = amemory or AsyncMemory(memory)  # the pages' work runs on its worker
        self.run: Run = run or self.amemory.run
        self.reopen = reopen
        self.read_only = read_only
        self.tools = Tools(memory)
        self.guard = guard or Guard(token, hosts=hosts)
        self.prefix = prefix.rstrip("/")
        self.lock = threading.Lock()
        self._cache: dict[str, tuple[int, object]] = {}
        self._soon_lock = threading.Lock()
        self._survey: Survey | None = None
        self._workers: dict[str, tuple[int, threading.Thread]] = {}
        self.env = Environment(
            loader=PackageLoader("memdir.ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals.update(url=self.url, svg=svg, nav=NAV)
        self.env.filters["when"] = when
        self.env.filters["marked"] = marked
        self.static = {
            item.name: item.read_bytes()
            for item in resources.files("memdir.ui").joinpath("static").iterdir()
            if item.is_file()
        }

    def fingerprint(self, stores: Collection[str] | None = None) -> int:
        """What the files of the layers backed by ``stores`` (all: None) are now
        (``listing.fingerprint``: from the index's file list, no walk of the files)."""
        return fingerprint(self.memory, self.files(), stores)

    def files(self) -> Survey:
        """Each layer's files (``listing.survey``), found once per request
        (``endpoint`` forgets them when the request ends)."""
        if self._survey is None:
            self._survey = survey(self.memory)
        return self._survey

    def cached(self, key: str, fingerprint: int, compute: Callable[[], T]) -> T:
        """``compute()``, or what it gave last time if ``fingerprint`` has not moved: a
        view that reads every card (the graph, doctor) reads them again only when one
        changed, which the index's file list tells."""
        hit = self._cache.get(key)
        if hit is not None and hit[0] == fingerprint:
            return cast(T, hit[1])
        value = compute()
        self._cache[key] = (fingerprint, value)
        return value

    def soon(
        self, key: str, fingerprint: int, compute: Callable[[Memory], T], *, wait: float = 1.0
    ) -> Later[T]:
        """``cached``, for what may take long (doctor on a 10k-card vault): computed in a
        thread of its own, on the folder opened for it (as another process would), and
        waited for ``wait`` seconds; if it is not done by then, the page says so (with
        the value from before the last change, if any) and a later load shows it."""
        with self._soon_lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == fingerprint:
                return cast(Later[T], hit[1])
            worker = self._workers.get(key)
            if worker is None or worker[0] != fingerprint:
                worker = (fingerprint, self._start(key, fingerprint, compute))
                self._workers[key] = worker
        worker[1].join(wait)
        with self._soon_lock:
            hit = self._cache.get(key)
        if hit is not None and hit[0] == fingerprint:
            return cast(Later[T], hit[1])
        before = None if hit is None else cast(Later[T], hit[1]).value
        return Later(False, before)

    def _start(
        self, key: str, fingerprint: int, compute: Callable[[Memory], T]
    ) -> threading.Thread:
        root, clock = self.memory.root, self.memory.clock
        embedder = self.memory.index.embedder or "none"

        def opened() -> Memory:
            if self.reopen is not None:
                return self.reopen()
            return open_memory(root, clock=clock, embedder=embedder)

        def run() -> None:
            try:
                with opened() as own:
                    done: Later[T] = Later(True, compute(own))
            except Exception as exc:  # the page says it failed; the next change tries again
                done = Later(True, None, f"{type(exc).__name__}: {exc}")
            with self._soon_lock:
                self._cache[key] = (fingerprint, done)

        thread = threading.Thread(target=run, name=f"memdir-ui-{key}", daemon=True)
        thread.start()
        return thread

    def url(self, path: str = "", /, **query: Any) -> str:
        shown = {key: value for key, value in query.items() if value not in (None, "")}
        tail = f"?{urlencode(shown)}" if shown else ""
        return f"{self.prefix}{path or '/'}{tail}"

    def page(
        self, request: Request, template: str, *, status: int = 200, **context: Any
    ) -> HTMLResponse:
        memory = self.memory
        html = self.env.get_template(template).render(
            request=request,
            csrf=self.guard.csrf_for(request),
            folder=memory.root if memory.backend == "local" else memory.storage.where,
            read_only=self.read_only,
            has=memory.has,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """An agent tool, as the agent calls it: ``{ok, ...}`` or ``{ok: false, reason}``."""
        return self.tools.call(name, args, writer="person")

    def done(self, path: str, result: dict[str, Any] | WriteResult, anchor: str = "") -> Response:
        """After a write that went through: back to the page (303), saying what happened."""
        said = result.to_dict() if isinstance(result, WriteResult) else result
        note = "; ".join([str(said.get("action", "done")), *said.get("notes", [])])
        return RedirectResponse(self.url(path, done=note) + anchor, status_code=303)


def when(value: object) -> str:
    """A date or moment as the pages show it: ``2026-11-30 10:00``."""
    if value is None or value == "":
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text.replace("T", " ")[:16].removesuffix("+00:00")


def marked(snippet: str) -> Markup:
    """A search snippet with its ``**marked**`` words as ``<mark>``, everything escaped."""
    parts = str(escape(snippet)).split("**")
    return Markup(
        "".join(f"<mark>{part}</mark>" if n % 2 else part for n, part in enumerate(parts))
    )


def _secured(response: Response) -> Response:
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)
    return response


def _refused(status: int, message: str) -> Response:
    body = (
        "<!doctype html><meta charset=utf-8><title>memdir: refused</title>"
        f"<h1>{status}</h1><p role=alert>{_escape(message)}</p>"
    )
    return _secured(HTMLResponse(body, status_code=status))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


async def read_form(request: Request) -> FormData | tuple[int, str]:
    """The posted form, or the status and reason it is refused with: only URL-encoded
    UTF-8 (what the page's forms send) up to ``FORM_MAX_BYTES``. Starlette's parser
    would turn bytes that are not UTF-8 into replacement characters, or read them as
    Latin-1, and the edit would save text nobody typed."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != FORM_TYPE:
        return 415, f"a form is sent as {FORM_TYPE}, not {kind or 'no content type'!r}"
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_MAX_BYTES:
            return 413, f"the form is over {FORM_MAX_BYTES // (1024 * 1024)} MiB"
    try:
        text = bytes(body).decode("ascii")
        fields = parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError):
        return 400, "the form is not URL-encoded UTF-8: nothing was written"
    return FormData(cast("list[tuple[str, str | UploadFile]]", fields))


def endpoint(ui: UI, view: View, *, back: Back | None = None) -> Callable[[Request], Any]:
    """``view`` behind the guard: host, token (or its cookie), and on a write (a view
    with a ``back`` page) the CSRF token; then run on the folder's worker
    (``AsyncMemory.run``: off the event loop, in turn with the folder's other calls)
    under the page lock. With read-only access a write is refused before it runs: its
    ``back`` page says why, and nothing is written."""
    writes = back is not None

    async def handle(request: Request) -> Response:
        refusal = ui.guard.host_refusal(request)
        if refusal is not None:
            return _refused(403, refusal)
        if ui.guard.token_in_query(request):
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(kept)}" if kept else "")
            entered = RedirectResponse(target, status_code=303)
            entered.set_cookie(
                COOKIE, ui.guard.cookie_value(), httponly=True, samesite="strict", path=ui.prefix
            )
            return _secured(entered)
        if not ui.guard.authorised(request):
            response = _refused(
                401,
                "a token is required: open this page as /ui/?token=<token> once, or send "
                "'Authorization: Bearer <token>'",
            )
            response.headers["www-authenticate"] = "Bearer"
            return response
        form: FormData | None = None
        if writes:
            read = await read_form(request)
            if isinstance(read, tuple):
                return _refused(*read)
            form = read
            csrf = form.get("csrf")
            refusal = ui.guard.write_refusal(request, csrf if isinstance(csrf, str) else "")
            if refusal is not None:
                return _refused(403, refusal)

        def run() -> Response:
            with ui.lock:
                ui._survey = None  # this request sees the files as they are now
                try:
                    if back is not None and ui.read_only:
                        return back(ui, request, form, refusal=ui.read_only, status=403)
                    return view(ui, request, form)
                finally:
                    ui._survey = None

        return _secured(await ui.run(run))

    return handle


def _static(ui: UI) -> Callable[[Request], Any]:
    async def handle(request: Request) -> Response:
        name = str(request.path_params["name"])
        data = ui.static.get(name)
        suffix = name[name.rfind(".") :] if "." in name else ""
        if data is None or suffix not in STATIC_TYPES:
            return PlainTextResponse("not found", status_code=404)
        response = Response(data, media_type=STATIC_TYPES[suffix])
        response.headers["cache-control"] = "max-age=3600"
        response.headers["x-content-type-options"] = "nosniff"
        return response

    return handle


def routes(ui: UI) -> list[Route]:
    from memdir.ui import consolidation, episodes, files, history, overview, search, vault, working

    def get(path: str, view: View) -> Route:
        return Route(path, endpoint(ui, view), methods=["GET", "HEAD"])

    def post(path: str, view: View, back: Back) -> Route:
        return Route(path, endpoint(ui, view, back=back), methods=["POST"])

    return [
        get("/", overview.page),
        get("/memory", working.page),
        post("/memory/section", working.edit_section, working.page),
        post("/memory/notebook", working.edit_notebook, working.page),
        post("/memory/state", working.edit_state, working.page),
        post("/memory/observation", working.edit_observation, working.page),
        get("/search", search.page),
        get("/file", files.page),
        get("/vault", vault.page),
        get("/vault/card", vault.card),
        get("/episodes", episodes.page),
        get("/episodes/activity", episodes.activity),
        get("/episodes/session", episodes.session),
        get("/consolidation", consolidation.page),
        post("/consolidation/restore", consolidation.restore, consolidation.page),
        get("/history", history.page),
        post("/history/restore", history.restore, history.page),
        Route("/static/{name}", _static(ui), methods=["GET", "HEAD"]),
    ]


def build_app(
    memory: Memory,
    *,
    token: str | None = None,
    hosts: tuple[str, ...] | None = None,
    prefix: str = PREFIX,
) -> Starlette:
    """The pages of ``memory`` at ``prefix`` (``/`` sends a browser there)."""
    return app_of(UI(memory, token=token, hosts=hosts, prefix=prefix))


def app_of(ui: UI) -> Starlette:
    """The ASGI app of ``ui``'s pages, at its prefix."""

    async def home(request: Request) -> Response:
        return RedirectResponse(ui.url("/"), status_code=307)

    app = Starlette(routes=[Route("/", home), Mount(ui.prefix, routes=routes(ui))])
    app.state.ui = ui
    return app
