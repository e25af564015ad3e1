"""gitleaks' published rules, vendored, run under Python ``re`` behind a keyword prefilter.

``data/gitleaks.toml`` is gitleaks' default configuration, unmodified (MIT, see
``data/gitleaks.LICENSE``; upstream github.com/gitleaks/gitleaks, config/gitleaks.toml
as of v8.30.0, commit 09242ce9c8a60d9b051fc2d166f9e849b88c7ac0). To update it, replace
the file and run ``bench/secrets.py``; no code here names a rule but ``SKIPPED``.

``rules()`` reads it once, on first use (never at import of memdir); a rule's regex is
compiled the first time a text holds one of its keywords. The regexes are Go RE2;
``translate`` makes them Python ``re`` mechanically: a flag group in the middle
(``p8e-(?i)[a-z0-9]{32}``) scopes the rest of its group (``p8e-(?i:[a-z0-9]{32})``),
``\\z`` becomes ``\\Z``, POSIX classes (``[[:alnum:]]``) are spelled out, and ``[``
inside a class is escaped; they compile with ``re.ASCII``, as RE2's ``\\w \\b \\s`` are.

A finding follows gitleaks' detector (detect/detect.go): the rule matches; its secret
is the ``secretGroup`` or else the first non-empty group; it is dropped if its Shannon
entropy is at or under the rule's ``entropy``, or if the global or the rule's own
allowlist allows it (regexes on the secret, the match or the line; stopwords contained
in the secret). Rules and allowlists that need a file path (``.php``, ``.tf``,
``nuget.config``) never apply: a memory has no path.

Two prose adaptations, applied to the rules as they load: a secret may end a sentence
or a clause (gitleaks' ``(?:[\\x60'"\\s;]|\\\\[nr]|$)`` after a secret also takes ``.,!?)]}>``),
and between a name and its secret "is" or "was" counts as an operator (``the Mailchimp
key is X``).

Speed (this runs on every write): ``Keywords`` finds every keyword of every rule in one
Aho-Corasick pass over the lowercased text (gitleaks' own prefilter; ``ahocorasick-rs``),
and only rules with a keyword present run. Python's engine backtracks where RE2 does
not, so three rewrites keep it off the slow paths without changing what matches: a
leading ``\\b`` is checked by hand; the ``[\\w.-]{0,50}?`` that opens gitleaks'
"semi-generic" rules (``name ... = secret``) is dropped and the match's start found
afterwards by walking back over the same characters; and a rule whose every match
starts with one of its keywords (its names, or the literal its regex opens with) is
tried only there, each try inside a 2,048-character window (a match that reaches the
window's edge, or a try the edge cut in the middle of a token, is made again whole).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources

from ahocorasick_rs import AhoCorasick

# Rules left out, with the reason. (None today: each is measured by bench/secrets.py.)
SKIPPED: frozenset[str] = frozenset()
# Rules that name no provider ("auth = ..."): the least specific, run apart and last.
GENERIC = frozenset({"generic-api-key"})

_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z",
          "upper": "A-Z", "space": r" \t\n\r\f\v", "xdigit": "0-9A-Fa-f", "word": r"\w",
          "punct": r"!-/:-@\[-`{-~"}  # fmt: skip
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*-?[a-zA-Z]*)\)")
_POSIX_CLASS = re.compile(r"\[:(\w+):\]")
# "(?i)[\w.-]{0,50}?" or "[\w.-]{0,50}?(?i:[\w.-]{0,50}?" opens a semi-generic rule
_SEMI_GENERIC = re.compile(r"(\(\?i\))?\[\\w\.-\]\{0,50\}\?(\(\?i:\[\\w\.-\]\{0,50\}\?)?")
# After a secret gitleaks wants a quote, a space, ";" or the end; in prose a secret can end
# a sentence or a clause too. Between a name and its secret, prose says "is" or "was".
_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
_PROSE_END = r"""(?:[\x60'"\s;.,!?)\]}>]|\\[nr]|$)"""
_OPERATOR = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"
_PROSE_OPERATOR = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,|\bis\b|\bwas\b)"
_IDENTIFIER_END = r"(?:[ \t\w.-]{0,20})"
_WORD = re.compile(r"[\w.-]", re.ASCII)
_SPACE = re.compile(r"\s")
_SURROGATE = re.compile("[\ud800-\udfff]")
# "any character, any number of times" (curl ... -H, a PEM block): tried from each keyword
# it could scan a whole window, so its window is shorter
_WILDCARD = re.compile(r"\.\*|\.\+|\.\{\d+,\d*\}|\[\\s\\S[^\]]*\]|\(\?s:\.\)")
_WINDOW = 2048  # characters a match may span from its keyword before it is redone whole


def translate(go: str) -> str:
    """A Go RE2 regex as a Python ``re`` regex that matches the same strings."""
    out: list[str] = []
    frames: list[list[str]] = [[]]  # per open group: the flags scoped since its start
    i, in_class = 0, False
    while i < len(go):
        c = go[i]
        if c == "\\":
            out.append(r"\Z" if go[i + 1 : i + 2] == "z" else go[i : i + 2])
            i += 2
            continue
        if in_class:
            posix = _POSIX_CLASS.match(go, i)
            if posix:
                out.append(_POSIX[posix[1]])
                i = posix.end()
                continue
            out.append("\\[" if c == "[" else c)
            in_class = c != "]"
            i += 1
            continue
        if c == "[":
            in_class = True
            head = re.match(r"\[\^?\]?", go[i:])
            assert head is not None
            out.append(head[0].replace("]", "\\]"))
            i += len(head[0])
            continue
        flags = _FLAG_GROUP.match(go, i) if c == "(" else None
        if flags and (out or len(frames) > 1):
            out.append(f"(?{flags[1]}:")  # scopes the rest of the group, as in RE2
            frames[-1].append(flags[1])
        elif flags:
            out.append(flags[0])  # flags at the very start are global in both
        elif c == "(":
            frames.append([])
            out.append(c)
        elif c == "|":
            scoped = frames[-1]
            out.append(")" * len(scoped) + "|" + "".join(f"(?{f}:" for f in scoped))
        elif c == ")":
            out.append(")" * len(frames.pop()) + ")")
        else:
            out.append(c)
        i = flags.end() if flags else i + 1
    out.append(")" * len(frames[0]))
    return "".join(out)


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def is_word_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def at_boundary(text: str, at: int) -> bool:
    """``\\b`` at ``at``, in ASCII as RE2's."""
    before = at > 0 and is_word_char(text[at - 1])
    return before != (at < len(text) and is_word_char(text[at]))


class Keywords:
    """Where each of a set of keywords occurs in a text: one pass, case-insensitive."""

    def __init__(self, keywords: Iterable[str]) -> None:
        self.words = sorted({k.lower() for k in keywords})
        self._automaton = AhoCorasick(self.words)

    def find(self, text: str) -> dict[str, list[int]]:
        """Each keyword present in ``text`` -> the offsets where it starts."""
        low = text.lower()
        if len(low) != len(text):  # a few characters lowercase to two; keep offsets
            low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
        try:
            matches = self._automaton.find_matches_as_indexes(low, overlapping=True)
        except UnicodeEncodeError:  # a lone surrogate (bytes read with surrogateescape)
            low = _SURROGATE.sub("\ufffd", low)
            matches = self._automaton.find_matches_as_indexes(low, overlapping=True)
        found: dict[str, list[int]] = {}
        words = self.words
        for index, start, _ in matches:
            at = found.get(words[index])
            if at is None:
                found[words[index]] = [start]
            else:
                at.append(start)
        return found


@dataclass(frozen=True)
class Allowlist:
    target: str  # "secret", "match" or "line"
    sources: tuple[str, ...]
    stopwords: tuple[str, ...]

    @cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(translate(r), re.ASCII) for r in self.sources)

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = {"secret": secret, "match": match, "line": line}[self.target]
        low = secret.lower()
        return any(r.search(text) for r in self.regexes) or any(w in low for w in self.stopwords)


@dataclass(frozen=True)
class Match:
    rule: str
    start: int
    end: int
    """the span of the secret (the secret group), not of the whole match"""


@dataclass
class Rule:
    id: str
    source: str
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]
    semi_generic: bool = False
    boundary: bool = False
    anchors: tuple[str, ...] = ()
    """keywords where every match starts (then it is only tried there), or none"""
    window: int = _WINDOW
    _regex: re.Pattern[str] | None = field(default=None, repr=False)

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            self._compile()
        assert self._regex is not None
        return self._regex

    def _compile(self) -> None:
        source = self.source.replace(_END, _PROSE_END).replace(_OPERATOR, _PROSE_OPERATOR)
        if _WILDCARD.search(source):
            self.window = _WINDOW // 4
        semi = _SEMI_GENERIC.match(source)
        if semi:  # (?i)[\w.-]{0,50}?(?:names)...: drop the lazy run, keep the flags
            opening = (semi[1] or "") + ("(?i:" if semi[2] else "")
            source = opening + source[semi.end() :]
            names = source.split(_IDENTIFIER_END)[0] + (")" if semi[2] else "")
            self.semi_generic = True
            try:
                accepts = re.compile(translate(names), re.ASCII).fullmatch
                if all(accepts(k) for k in self.keywords):  # the names are the keywords
                    self.anchors = self.keywords
            except re.error:  # not the usual shape: search the whole text instead
                pass
        else:
            if source.startswith((r"\b", r"(?i)\b")):
                source = source.replace(r"\b", "", 1)
                self.boundary = True
            lead = _leading_literal(source).lower()
            self.anchors = tuple(k for k in self.keywords if lead.startswith(k))
        self._regex = re.compile(translate(source), re.ASCII)

    def matches(self, text: str, hits: dict[str, list[int]]) -> Iterator[re.Match[str]]:
        regex = self.regex
        if self.anchors:
            end = long_token = 0
            for start in sorted({p for k in self.anchors for p in hits.get(k, ())}):
                if start < end or self.boundary and not at_boundary(text, start):
                    continue
                # A window bounds the work per keyword (Python's engine backtracks where
                # RE2 does not). A match that reaches its edge is made again in full, and
                # so is a failed one if the edge cut a token (a secret has no spaces),
                # once per token: a long run holding the keyword many times costs one.
                edge = start + self.window
                m = regex.match(text, start, edge)
                cut = m is None and start >= long_token and not _SPACE.search(text, start, edge)
                if edge < len(text) and (cut or (m is not None and m.end() == edge)):
                    if cut:
                        space = _SPACE.search(text, edge)
                        long_token = space.start() if space else len(text)
                    m = regex.match(text, start)
                if m is not None:
                    end = max(m.end(), start + 1)
                    yield m
            return
        pos = 0
        while (m := regex.search(text, pos)) is not None:
            start = m.start()
            if self.boundary and not at_boundary(text, start):
                pos = start + 1  # \b failed here; a match may still start further on
                continue
            yield m
            pos = max(m.end(), start + 1)


def _leading_literal(source: str) -> str:
    """The literal every match of ``source`` starts with ("" if none is sure)."""
    at = 4 if source.startswith("(?i)") else 0
    depth = 0
    while source.startswith("(", at) and not source.startswith("(?", at):
        at, depth = at + 1, depth + 1
    lead = re.match(r"(?:[A-Za-z0-9_~:/-]|\\[.\-])*", source[at:])
    literal = lead[0].replace("\\", "") if lead else ""
    if source[at + len(lead[0] if lead else "") : at + len(lead[0] if lead else "") + 1] in "?*{":
        literal = literal[:-1]  # the last character is optional
    level = 0  # an alternative at the literal's level would start differently
    for c, escaped in _unescaped(source):
        if c == "(" and not escaped:
            level += 1
        elif c == ")" and not escaped:
            level -= 1
            if level < depth:
                break
        elif c == "|" and not escaped and level <= depth:
            return ""
    return literal


def _unescaped(source: str) -> Iterator[tuple[str, bool]]:
    """The characters of a regex outside classes, each with whether it is escaped."""
    i, in_class = 0, False
    while i < len(source):
        c = source[i]
        if c == "\\":
            yield source[i + 1 : i + 2], True
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if source.startswith("]", i + 1) or source.startswith("^]", i + 1):
                i += 1 + source[i + 1 :].index("]")
        else:
            yield c, False
        i += 1


def _allowlist(raw: dict[str, object]) -> Allowlist | None:
    """None for an allowlist that needs a path or a commit, which a memory never has."""
    regexes, stopwords = raw.get("regexes") or [], raw.get("stopwords") or []
    assert isinstance(regexes, list) and isinstance(stopwords, list)
    if (raw.get("paths") or raw.get("commits")) and (
        raw.get("condition") == "AND" or not (regexes or stopwords)
    ):
        return None
    return Allowlist(
        str(raw.get("regexTarget") or "secret"),
        tuple(str(r) for r in regexes),
        tuple(str(w).lower() for w in stopwords),
    )


@dataclass
class Rules:
    rules: list[Rule]
    allowlists: tuple[Allowlist, ...]
    by_keyword: dict[str, list[int]] = field(default_factory=dict)
    """keyword -> the rules (their places in ``rules``) that it lets run"""

    def __post_init__(self) -> None:
        for n, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                self.by_keyword.setdefault(keyword, []).append(n)

    def scan(self, text: str, hits: dict[str, list[int]], generic: bool = False) -> Iterator[Match]:
        """Findings of the provider rules (or the ``GENERIC`` ones) in ``text``, given
        ``hits``: where each keyword occurs in it (``Keywords.find``)."""
        due = sorted({n for k in hits for n in self.by_keyword.get(k, ())})
        for rule in (self.rules[n] for n in due):
            if (rule.id in GENERIC) == generic:
                yield from self._findings(rule, text, hits)

    def _findings(self, rule: Rule, text: str, hits: dict[str, list[int]]) -> Iterator[Match]:
        seen = set()
        for match in rule.matches(text, hits):
            group = rule.secret_group or next((n for n, g in enumerate(match.groups(), 1) if g), 0)
            secret, span = match[group], match.span(group)
            if span in seen or (rule.entropy and entropy(secret) <= rule.entropy):
                continue
            seen.add(span)
            start = match.start()
            if rule.semi_generic:  # where the dropped [\w.-]{0,50}? would have begun
                floor = max(0, start - 50)
                while start > floor and _WORD.match(text[start - 1]):
                    start -= 1
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", match.end())
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            whole = text[start : match.end()]
            if not any(a.allows(secret, whole, line) for a in self.allowlists + rule.allowlists):
                yield Match(rule.id, *span)


@cache
def rules() -> Rules:
    """The vendored rule set, read once."""
    data = resources.files("memdir").joinpath("data/gitleaks.toml").read_text("utf-8")
    raw = tomllib.loads(data)
    loaded = []
    for rule in raw["rules"]:
        if rule["id"] in SKIPPED or "regex" not in rule or "path" in rule:
            continue
        lists = (_allowlist(a) for a in rule.get("allowlists", []))
        loaded.append(
            Rule(
                id=rule["id"],
                source=rule["regex"],
                keywords=tuple(k.lower() for k in rule.get("keywords", [])),
                entropy=float(rule.get("entropy", 0.0)),
                secret_group=int(rule.get("secretGroup", 0)),
                allowlists=tuple(a for a in lists if a is not None),
            )
        )
    unkeyed = [rule.id for rule in loaded if not rule.keywords]
    assert not unkeyed, f"rules without keywords would run on every text: {unkeyed}"
    found = _allowlist(raw.get("allowlist", {}))
    return Rules(loaded, (found,) if found else ())
