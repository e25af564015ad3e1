"""The rule machinery of the poisoning flagger and its guards for ordinary text
(``memdir.safety.poisoning`` states the design; the English patterns and the table of
rules are in ``memdir.safety.poisoning_patterns``, other languages in
``memdir.safety.poisoning_languages``).

A ``Rule`` names its kind, its ``needs`` (groups of trigger words: the regex runs
only when every group has one in the text, which keeps an ordinary memory cheap),
an optional ``check`` on each match (a guard) and whether it is ``anchored``: then
its matches start at a word of the first group, and the regex is tried only where
``str.find`` finds one, much cheaper than a regex scan over the text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass


def any_of(words: str) -> str:
    """``(?:a|b|...)`` from space-separated alternatives; ``_`` in one is ``\\s+``."""
    return "(?:" + "|".join(w.replace("_", r"\s+") for w in words.split()) + ")"


def _word_re(words: str) -> re.Pattern[str]:
    return re.compile(r"\b" + any_of(words) + r"\b")


# ------------------------------------------------------------------ needs and rules

_WORD = re.compile(r"[a-z0-9']+")
# bytes: ASCII letters, digits and apostrophes stay, everything else is a space
_SEPARATORS = bytes(c if (chr(c).isalnum() and c < 128) or c == 39 else 32 for c in range(256))


def words_of(norm: str) -> set[str]:
    """The words of a lowered text, for ``Needs``: runs of ASCII letters, digits
    and apostrophes ("précédentes" gives "pr", "c", "dentes")."""
    raw = norm.encode("utf-8", "surrogatepass").translate(_SEPARATORS)
    return set(raw.decode("ascii").split())


@dataclass(frozen=True)
class Needs:
    """Trigger words: every group must have one in the text. A plain word is looked
    up among the text's words; anything else ("from now", "<|", Cyrillic, and a
    word after ``*``) is a substring of the text, tried only when its leading word
    is among the text's words."""

    groups: tuple[tuple[frozenset[str], tuple[tuple[str | None, str], ...]], ...]

    @classmethod
    def of(cls, *groups: str) -> Needs:
        parsed = []
        for group in groups:
            tokens = [t.replace("+", " ") for t in group.split()]
            words = frozenset(t for t in tokens if _WORD.fullmatch(t))
            phrases = []
            for token in (t for t in tokens if t not in words):
                lead = None if token.startswith("*") else _WORD.match(token)
                phrases.append((lead.group() if lead else None, token.lstrip("*")))
            parsed.append((words, tuple(phrases)))
        return cls(tuple(parsed))

    def met(self, words: set[str], norm: str, skip: int = 0, upto: int | None = None) -> bool:
        """Whether every group (from ``skip``, before ``upto``) has one in the text."""
        return all(
            not found.isdisjoint(words)
            or any((first is None or first in words) and sub in norm for first, sub in phrases)
            for found, phrases in self.groups[skip:upto]
        )

    def starts(self, words: set[str], norm: str) -> list[int]:
        """Where the first group's words and phrases occur in ``norm``, in order."""
        found, phrases = self.groups[0]
        tokens = [w for w in found if w in words]
        tokens += [sub for first, sub in phrases if first is None or first in words]
        positions = set()
        for token in tokens:
            at = norm.find(token)
            while at >= 0:
                positions.add(at)
                at = norm.find(token, at + 1)
        return sorted(positions)


Check = Callable[[str, re.Match[str]], bool]


@dataclass(frozen=True)
class Rule:
    kind: str
    regex: str
    needs: Needs
    check: Check | None = None
    anchored: bool = False

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: most rules never run in a process (their trigger
        words are rare), and compiling them all costs a noticeable import."""
        return re.compile(self.regex)


def rule(kind: str, regex: str, check: Check | None, *needs: str) -> Rule:
    """A rule; each of ``needs`` is one group of space-separated trigger words."""
    return Rule(kind, regex, Needs.of(*needs), check)


def anchored(kind: str, regex: str, check: Check | None, starts: str, *needs: str) -> Rule:
    """A rule whose matches start at one of ``starts``."""
    return Rule(kind, regex, Needs.of(starts, *needs), check, anchored=True)


OV, RP, EX, FT = "override", "role-play", "exfiltration", "fake tag"

# ------------------------------------------------------------------ the guards' words

S = r"[\s\"'`*_]+"  # a gap between words: spaces, quotes, markdown emphasis
MODEL = any_of(
    r"ai a\.i\. assistants? llms? language_models? models? chatbots? agents? bots? gpts? claude"
    " chatgpt copilot gemini"
)
_MODEL_AIMED = _word_re(
    "your their its all any every previous previously prior above aforementioned earlier"
    " preceding foregoing original initial system safety ethical moral developer openai"
    " anthropic built-in core existing current content"
)
_AFTER_OBJ = re.compile(  # "... the instructions you were given"
    r"\s+(?:you(?:'ve|\s+have|\s+were|\s+had|\s+got)?\s+(?:been\s+)?(?:given|told|received"
    r"|trained|programmed|taught)|above|before\s+this|so\s+far|until\s+now|up\s+to\s+now"
    r"|in\s+this\s+(?:conversation|chat|prompt|context|session|message))"
)
_SCOPE = re.compile(  # "... instructions for the dishwasher": about a thing, not the model
    r"\s+(?:for|on|about|regarding|concerning|from|of|at|in|to|with|under|inside|below)\s+"
    r"(?:(?:the|a|an|my|our|his|her|their)\s+)?(?!(?:you|your|this|these|that|those|above|me|us"
    r"|prior|previous|earlier|all|any|every|system|assistant|ai|model|developers?|openai"
    r"|anthropic|chat|conversation|prompt|context)\b)[\w-]"
)
_MODEL_CUE = _word_re(
    r"ai model llm assistant chatgpt claude gpt openai anthropic polic(?:y|ies) restrictions?"
    r" filters? censor\w* guidelines refus\w*"
)
_DEVICE_CUE = _word_re(
    r"phone android pixel iphone ios chrome chromebook windows mac macos linux vs\s*code"
    r" extensions? browser switch tv router settings build_number usb adb apps? device laptop"
    r" tablet xbox playstation console game bios firmware wordpress printer camera car menu"
)
_TOOL_CUE = re.compile(
    r"\bbefore\s+(?:you\s+)?(?:respond|reply|answer|continu|proceed|finish)\w*|\byou\b|\byour\b"
    r"|\bto\s+(?:close|complete|finish|reset|resolve)\s+this\b|\bthis\s+(?:summary|ticket"
    r"|document|record|result|conversation|task)\b"
)
_META = _word_re(
    r"injections? attacks? attackers? red[\s-]?team\w* phishing moderation detectors? classic"
    r" article paper talk research known_as so-called"
)
_REPORTING = _word_re(
    r"says? said saying told tell(?:s|ing)? lists? listed flags? flagged contains? mentions?"
    r" reads? called like such_as"
)

# ------------------------------------------------------------------ checks


def _sentence(norm: str, start: int, end: int) -> str:
    left = max(norm.rfind(c, 0, start) for c in ".!?\n")
    ends = [i for i in (norm.find(c, end) for c in ".!?\n") if i >= 0]
    return norm[left + 1 : min(ends, default=len(norm))]


_ADDRESSES = re.compile(r"\S+@\S+|\w+://\S+")  # "attacker@evil.test" is no talk about attacks


def mention(norm: str, m: re.Match[str]) -> bool:
    """In a sentence about prompt injection, or quoted after a reporting verb."""
    if _META.search(_ADDRESSES.sub(" ", _sentence(norm, m.start(), m.end()))):
        return True
    if any(q in norm[max(0, m.start() - 2) : m.start()] for q in "'\"“‘`"):
        head = norm[max(0, m.start() - 80) : m.start()]
        return bool(_REPORTING.search(head[head.rfind(".") + 1 :]))
    return False


def not_mention(norm: str, m: re.Match[str]) -> bool:
    return not mention(norm, m)


def aimed_at_model(norm: str, m: re.Match[str]) -> bool:
    """Aimed at the model, not scoped to a thing, not a mention."""
    tail = norm[m.end() : m.end() + 60]
    after = bool(_AFTER_OBJ.match(tail))
    aimed = after or bool(_MODEL_AIMED.search(m.group("target")))
    return aimed and (after or not _SCOPE.match(tail)) and not mention(norm, m)


_LEAD = re.compile(
    r"(?:^|[\s,])(?:please|now|just|and|then|so|ok|okay|also|kindly|hey|hi|you|from\s+now\s+on"
    rf"|henceforth|going\s+forward|{MODEL})[\s,]*$"
)


def _clause_start(norm: str, pos: int) -> bool:
    """Nothing but punctuation, a greeting or an address ("assistant, ...") before pos."""
    head = norm[max(0, pos - 60) : pos]
    while (lead := _LEAD.search(head)) is not None:
        head = head[: lead.start()]
    head = head.rstrip()
    return not head or head[-1] in ".!?:;\"'(-*>\n"


def persona_addressed(norm: str, m: re.Match[str]) -> bool:
    """A strong persona anywhere; a weak one (root, admin), or the bare "be" and
    "become", only addressed to "you" or as an imperative."""
    frame = m.group("frame")
    if m.group("strong") and frame not in ("be", "become"):
        return not mention(norm, m)
    return ("you" in frame or _clause_start(norm, m.start())) and not mention(norm, m)


def mode_about_model(norm: str, m: re.Match[str]) -> bool:
    window = norm[max(0, m.start() - 120) : m.end() + 120]
    return bool(_MODEL_CUE.search(window)) and not _DEVICE_CUE.search(window)


def tool_call_to_model(norm: str, m: re.Match[str]) -> bool:
    return bool(_TOOL_CUE.search(norm[max(0, m.start() - 120) : m.end() + 160]))


_TAG_NOUN = re.compile(
    r"\s+(?:elements?|tags?|blocks?|roots?|nodes?|sections?|fields?|tokens?|wrappers?|markup"
    r"|children|entry|keys?|attributes?|and\s+<|or\s+<)"
)
_ARTICLE_BEFORE = re.compile(r"\b(?:the|a|an|each|every|its|their|our|this|that|with|as|like)\s+$")


def tag_used(norm: str, m: re.Match[str]) -> bool:
    """A role or tool tag used as markup, not mentioned in prose or quoted."""
    before, after = norm[max(0, m.start() - 12) : m.start()], norm[m.end() : m.end() + 24]
    if (before and before[-1] in "'\"`‘“") or (after and after[0] in "'\"`’”"):
        return False
    return not _ARTICLE_BEFORE.search(before) and not _TAG_NOUN.match(after)


def token_used(norm: str, m: re.Match[str]) -> bool:
    """A chat-template token followed by a role, a line end or another token."""
    if m.group().strip("<|>") in ("system", "user", "assistant"):
        return tag_used(norm, m)
    after = norm[m.end() : m.end() + 20]
    return bool(re.match(r"[ \t]*(?:\n|$|<|\[|(?:system|user|assistant|model)\b)", after))


def inst_used(norm: str, m: re.Match[str]) -> bool:
    body = m.group("body")
    return body is None or len(re.findall(r"[a-z]{2,}", body)) >= 2


TURN = re.compile(r"(?m)^[ \t>*]*(human|user|assistant|ai|gpt|claude|chatgpt|model|bot)[ \t]*:")


def forged_turns(norm: str, m: re.Match[str]) -> bool:
    """A Human or User turn and an assistant turn at line starts: a forged transcript."""
    roles = {t.group(1) for t in TURN.finditer(norm)}
    return bool(roles & {"human", "user"}) and bool(roles - {"human", "user"})
