"""memdir's own token shapes, and what every layer of ``memdir.safety.secrets`` asks of a value.

Internal to ``memdir.safety.secrets`` (which re-exports ``SecretFinding``). A shape is a
provider's documented token format, matched only where one of its keywords occurs
(``secret_rules.Keywords``): private key blocks (a ``-----BEGIN ... PRIVATE KEY-----``
header and a base64 body, also inside JSON with ``\\n`` escapes, as in a Google
service-account file; the header alone, as in prose, is not flagged), AWS access key
ids, GitHub, Slack, Discord webhooks, Anthropic, OpenAI, Groq, Replicate, xAI, Stripe,
Google, JWTs, Azure storage keys, Telegram bot tokens, passwords in URLs and
Authorization headers. A prefix alone ("sk_live is the Stripe prefix") or a short
body ("AKIAEXAMPLE") never matches.

``is_placeholder`` is the one test of "this is not a real value" for every layer;
``redact`` makes every preview.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memdir.safety.secret_rules import entropy, is_word_char


@dataclass(frozen=True)
class SecretFinding:
    kind: str
    start: int
    end: int
    preview: str
    """a redacted preview, never the whole secret"""


_PEM = r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_NL = r"(?:\s|\\[rn])"  # a newline, or its escape inside JSON or a quoted string
_PRIVATE_KEY = re.compile(
    rf"(?P<secret>{_PEM}{_NL}*(?:[\w-]+:[^\n\\]*(?:\n|\\n){_NL}*)*[A-Za-z0-9+/=]{{40,}}"
    rf"(?:(?:[A-Za-z0-9+/=]|{_NL})*{_PEM.replace('BEGIN', 'END')})?)"
)
_MASK = re.compile(r"x{4,}|X{4,}|\*{3,}|\.{3}|…|•{2,}")
_PLACEHOLDER_WORDS = ("example", "placeholder", "redacted", "your", "dummy", "changeme",
                      "replaceme", "todo", "sample")  # fmt: skip
_SPELLED = ("change_me", "change-me", "replace_me", "replace-me")
_NOUNS = ("", "key", "token", "secret", "password", "pass", "pwd")  # "EXAMPLEKEY", "yourtoken"
_STAND_INS = {"password", "passwd", "pass", "secret", "token", "changeme", "admin", "root", "test",
              "default", "none", "null", "nil", "undefined", "true", "false", "empty"}  # fmt: skip
SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
HEX = re.compile(r"[0-9a-fA-F]+")


def is_placeholder(value: str) -> bool:
    low = value.strip().lower()
    if not low or low[0] in "$<{%[" or low in _STAND_INS or _MASK.search(value):
        return True
    if set(low) <= set("x*.-_#?0 •…"):
        return True
    if any(word in low for word in _SPELLED):
        return True
    # a clear word: a part of its own, or a part's start or end ("...7EXAMPLE"), never
    # the middle of a random body, where "your" or "todo" turn up by chance
    ends = tuple(word + noun for word in _PLACEHOLDER_WORDS for noun in _NOUNS)
    return any(p.startswith(_PLACEHOLDER_WORDS) or p.endswith(ends) for p in SEPARATORS.split(low))


def looks_random(value: str) -> bool:
    """Letters with digits, or 16+ characters of mixed case at 3.5+ bits per character."""
    upper, lower = sum(c.isupper() for c in value), sum(c.islower() for c in value)
    if any(c.isdigit() for c in value):
        return upper + lower > 0
    return len(value) >= 16 and min(upper, lower) >= len(value) / 5 and entropy(value) >= 3.5


def random_word(value: str) -> bool:
    """One random-looking word of 8+ characters that is not a path or URL."""
    path = "://" in value or value.startswith(("/", "~", "./", "../"))
    return len(value) >= 8 and not path and len(value.split()) == 1 and looks_random(value)


def _mixed(value: str) -> bool:
    return all(any(map(test, value)) for test in (str.isupper, str.islower, str.isdigit))


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def redact(secret: str) -> str:
    """At most a quarter of ``secret``: its first 5 and last 4 characters when long."""
    head, tail = min(5, len(secret) // 6), min(4, len(secret) // 8)
    return secret[:head] + "…" + (secret[-tail:] if tail else "")


def _credentials(value: str) -> bool:
    """A random-looking token, or base64 of ``user:password`` (HTTP Basic)."""
    try:
        return looks_random(value) or ":" in base64.b64decode(value, validate=True).decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return False


def _anything(secret: str) -> bool:
    return True


Found = tuple[SecretFinding, str]  # a finding and the hint for the refusal


@dataclass(frozen=True)
class _Shape:
    """A token shape: ``regex`` matches where one of ``keywords`` starts."""

    kind: str
    keywords: tuple[str, ...]
    regex: re.Pattern[str]
    hint: str
    valid: Callable[[str], bool] = _anything
    before: str | None = "-"
    """characters that may not precede the match besides letters, digits and _ (None: any)"""

    def scan(self, text: str, hits: dict[str, list[int]]) -> Iterator[Found]:
        for start in sorted({p for k in self.keywords for p in hits.get(k, ())}):
            if (
                self.before is not None
                and start
                and (is_word_char(text[start - 1]) or text[start - 1] in self.before)
            ):
                continue
            match = self.regex.match(text, start)
            if match is None:
                continue
            secret = match["secret"]
            if is_placeholder(secret) or not self.valid(secret):
                continue
            groups = match.groupdict()
            preview = (groups.get("pre") or "") + redact(secret) + (groups.get("post") or "")
            yield SecretFinding(self.kind, *match.span("secret"), preview), self.hint


def _shape(
    kind: str,
    keywords: str,
    regex: str,
    hint: str,
    valid: Callable[[str], bool] = _anything,
    before: str | None = "-",
) -> _Shape:
    return _Shape(kind, tuple(keywords.split()), re.compile(regex), hint, valid, before)


ENV = "in .env"
SHAPES = [
    _shape("AWS access key id", "akia asia", r"(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{16})\b",
           "the AWS credentials in ~/.aws/credentials", before=""),
    _shape("GitHub token", "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
           r"(?P<secret>gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{40,})",
           f"the GitHub token {ENV}"),
    _shape("Slack token", "xoxa- xoxb- xoxp- xoxr- xoxs-",
           r"(?P<secret>xox[abprs]-[A-Za-z0-9-]{20,})", f"the Slack token {ENV}", _has_digit),
    _shape("Slack webhook URL", "https://hooks.slack.com/",
           r"(?P<pre>https://hooks\.slack\.com/(?:services|workflows|triggers)/)"
           r"(?P<secret>[\w/-]{20,})", f"the Slack webhook URL {ENV}", before=None),
    _shape("Discord webhook URL", "discord.com/api/webhooks/ discordapp.com/api/webhooks/",
           r"(?P<pre>discord(?:app)?\.com/api/webhooks/\d{17,20}/)(?P<secret>[\w-]{60,})",
           f"the Discord webhook URL {ENV}", before=None),
    _shape("Anthropic API key", "sk-ant-", r"(?P<secret>sk-ant-[\w-]{32,})",
           f"the Anthropic key {ENV}", _has_digit),
    _shape("OpenAI API key", "sk-", r"(?P<secret>sk-(?!ant-)[\w-]{20,})",
           f"the OpenAI key {ENV}", _mixed),
    _shape("Groq API key", "gsk_", r"(?P<secret>gsk_[A-Za-z0-9]{52})\b",
           f"the Groq key {ENV}", _mixed),
    _shape("Replicate API token", "r8_", r"(?P<secret>r8_[A-Za-z0-9]{37})\b",
           f"the Replicate token {ENV}", _mixed),
    _shape("xAI API key", "xai-", r"(?P<secret>xai-[A-Za-z0-9]{80})\b",
           f"the xAI key {ENV}", _mixed),
    _shape("Stripe secret key", "sk_live_ sk_test_ rk_live_ rk_test_",
           r"(?P<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{16,})", f"the Stripe key {ENV}"),
    _shape("Stripe webhook secret", "whsec_", r"(?P<secret>whsec_[A-Za-z0-9]{24,})",
           f"the Stripe webhook secret {ENV}"),
    _shape("Google API key", "aiza", r"(?P<secret>AIza[\w-]{35})(?![\w-])",
           f"the Google API key {ENV}"),
    _shape("JWT", "eyj", r"(?P<secret>eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,})",
           "the session token in the password manager"),
    _shape("Azure storage key", "accountkey=",
           r"(?P<pre>AccountKey=)(?P<secret>[A-Za-z0-9+/]{86}==)",
           f"the storage connection string {ENV}", before=None),
    _shape("authorization header", "authorization",
           r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<pre>(?i:Basic|Bearer|Token|Bot) +)"
           r"(?P<secret>[\w.~+/=-]{8,})", f"the API token {ENV}", _credentials, before=None),
    _shape("bearer token", "bearer", r"(?P<pre>Bearer +)(?P<secret>[\w.~+/-]{20,}=*)",
           f"the API token {ENV}", looks_random),
]  # fmt: skip
_TELEGRAM = re.compile(r":(?P<secret>AA[\w-]{33})(?![\w-])")
_URL_TAIL = re.compile(r"://(?P<user>[^\s:/@]*):(?P<secret>[^\s/@]+)(?P<post>@[^\s/@?#]+)")
_SCHEME = re.compile(r"[\w+.-]")
SHAPE_KEYWORDS = {k for shape in SHAPES for k in shape.keywords} | {"-----begin", "://", ":aa"}


def scan_private_keys(text: str, hits: dict[str, list[int]]) -> Iterator[Found]:
    for start in hits.get("-----begin", ()):
        match = _PRIVATE_KEY.match(text, start)
        if match:
            header = match["secret"].split("-----")[1]
            yield (SecretFinding("private key", *match.span(), f"-----{header}-----…"),
                   "the deploy key in ~/.ssh")  # fmt: skip


def scan_urls(text: str, hits: dict[str, list[int]]) -> Iterator[Found]:
    for at in hits.get("://", ()):
        start = at
        while start > 0 and at - start < 31 and _SCHEME.match(text[start - 1]):
            start -= 1
        if start == at or not text[start].isalpha():
            continue
        if start and _SCHEME.match(text[start - 1]):
            continue  # a longer run than a scheme: not a URL's start
        match = _URL_TAIL.match(text, at)
        if match is None or is_placeholder(match["secret"]):
            continue
        pre = text[start : match.start("secret")]
        preview = pre + redact(match["secret"]) + match["post"]
        yield (
            SecretFinding("password in a URL", *match.span("secret"), preview),
            ("the database URL in .env"),
        )


def scan_telegram(text: str, hits: dict[str, list[int]]) -> Iterator[Found]:
    """A Telegram bot token: the bot's id (8-10 digits), ":", then "AA" and 33 more."""
    for at in hits.get(":aa", ()):
        start = at
        while start > 0 and at - start < 11 and text[start - 1].isdigit():
            start -= 1
        match = _TELEGRAM.match(text, at)
        if 8 <= at - start <= 10 and not (start and is_word_char(text[start - 1])) and match:
            token = text[start : match.end()]
            yield (SecretFinding("Telegram bot token", start, match.end(), redact(token)),
                   f"the Telegram bot token {ENV}")  # fmt: skip
