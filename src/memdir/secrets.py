"""Spotting credentials before they are written to memory.

Never store secrets in memory files: reference them by name ("the Stripe key in
.env"). ``secret_refusal(text)`` is the check a store runs before a write (None,
or a reason); ``find_secrets(text)`` lists what it saw.

Rules, most specific first (a later finding overlapping an earlier one is dropped):

- Known token shapes, by prefix and length: private key blocks (a ``-----BEGIN
  ... PRIVATE KEY-----`` header followed by a base64 body; the header alone, as in
  prose, is not flagged), AWS access key ids (AKIA/ASIA + 16), GitHub (ghp_ gho_
  ghu_ ghs_ ghr_ github_pat_), Slack tokens (xox[abprs]-) and webhook URLs,
  Anthropic (sk-ant-), OpenAI (sk-, sk-proj-; the body must mix upper, lower and
  digits, so "sk-learn-..." is not a key), Stripe (sk_/rk_ live or test, whsec_),
  Google (AIza + 35), JWTs (eyJ + three base64url segments). A prefix alone
  ("sk_live is the Stripe prefix") or a short body ("AKIAEXAMPLE") never matches.
- Passwords in URLs: ``scheme://user:password@host``. ``user@host`` and
  ``host:8080`` have no password, so they do not match.
- Authorization headers (Bearer/Basic/Token) and a bare ``Bearer <token>``.
- Assignments (``name = value``, ``name: value``, JSON, YAML, .env, ``export``)
  whose name *ends* in a secret word: password, passwd, passphrase, pwd, pass,
  secret, token, credential(s), or api/access/secret/private/signing/encryption
  key. So
  ``DB_PASSWORD=`` and ``SECRET_TOKEN=`` count; ``password_reset_url``,
  ``max_tokens`` and "API key rotation:" do not. A quoted value under a password
  name is flagged at 6+ characters, spaces and all (``"correct horse battery
  staple"`` is a literal password). Any other value is flagged when it is one
  word of 8+ characters, not a path, URL or code reference (``settings.X``,
  ``os.environ[...]``, ``getpass()``), and looks random: letters with digits, or
  16+ characters, a fifth or more each upper and lower case, at 3.5+ bits of
  Shannon entropy per character (``tokenFromVault``, "token-from-vault" are
  not). Authorization values must look random too, or decode as Basic
  ``user:password``; a bare Bearer token must look random. An
  ``aws_secret_access_key`` value of 40 base64 characters is always flagged.

Placeholders are never flagged, whatever the rule: values starting with ``$ < { %
[`` (``$OPENAI_API_KEY``, ``${VAR}``, ``<your-key>``, ``{{ key }}``), masks
(``xxxx``, ``***``, ``...``, ``•••``), values holding example, placeholder,
redacted, your, dummy, changeme, replaceme or todo (AWS's documented
``AKIAIOSFODNN7EXAMPLE`` is an example, not a key), and bare stand-ins such as
password, secret, changeme, admin, null. ``changeme`` is treated as a
placeholder: templates ship it, and recording "the default is changeme" leaks
nothing. Not caught, by design: bare high-entropy strings with no prefix or
secret name (shas, UUIDs, checksums, ids are common in notes), and secrets in
prose ("the password is X").

A finding's ``start``/``end`` span the secret itself (the value, not its name);
its ``preview`` shows at most a quarter of it and never more than its first 5
and last 4 characters, e.g. "sk-pr…9f2Q" (URL previews keep scheme, user and host).
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretFinding:
    kind: str
    start: int
    end: int
    preview: str
    """a redacted preview, never the whole secret"""


_PEM = r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_PRIVATE_KEY = re.compile(
    rf"(?P<secret>{_PEM}\s*(?:[\w-]+:[^\n]*\n\s*)*[A-Za-z0-9+/=]{{40,}}"
    rf"(?:[A-Za-z0-9+/=\s]*{_PEM.replace('BEGIN', 'END')})?)"
)
_MASK = re.compile(r"x{4,}|X{4,}|\*{3,}|\.{3}|…|•{2,}")
_PLACEHOLDER_WORDS = ("example", "placeholder", "redacted", "your", "dummy", "changeme",
                      "change_me", "change-me", "replaceme", "replace_me", "todo")  # fmt: skip
_STAND_INS = {"password", "passwd", "pass", "secret", "token", "changeme", "admin", "root", "test",
              "default", "none", "null", "nil", "undefined", "true", "false", "empty"}  # fmt: skip
_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(.*)?|[A-Za-z_][\w.]*[(\[].*")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_WORDS = {"password", "passwd", "passphrase", "pwd", "pass"}
_SECRET_WORDS = _PASSWORD_WORDS | {"secret", "token", "credential", "credentials"}
_KEY_WORDS = {"apikey", "accesskey", "secretkey", "privatekey", "signingkey", "encryptionkey"}
_ASSIGNMENT = re.compile(
    r"(?<![\w.-])(?P<name>(?:[A-Za-z][\w-]{0,30} )?[A-Za-z_][\w.-]{0,63})[\"'*`]{0,3}"
    r"[ \t]*(?:=>|:=|(?::[ \t]*[\w\[\]. |]{1,30}?[ \t]*)?=|:)[ \t]*"
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{1,200})(?P=q)|(?P<bare>[^\s\"'`,;]{1,200}))"
)


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _is_placeholder(value: str) -> bool:
    low = value.strip().lower()
    return (
        not low
        or low[0] in "$<{%["
        or low in _STAND_INS
        or any(word in low for word in _PLACEHOLDER_WORDS)
        or bool(_MASK.search(value))
        or set(low) <= set("x*.-_#?0 •…")
    )


def _looks_random(value: str) -> bool:
    """Letters with digits, or 16+ characters of mixed case at 3.5+ bits per character."""
    upper, lower = sum(c.isupper() for c in value), sum(c.islower() for c in value)
    if any(c.isdigit() for c in value):
        return upper + lower > 0
    return len(value) >= 16 and min(upper, lower) >= len(value) / 5 and _entropy(value) >= 3.5


def _random_word(value: str) -> bool:
    """One random-looking word of 8+ characters that is not a path or URL."""
    path = "://" in value or value.startswith(("/", "~", "./", "../"))
    return len(value) >= 8 and not path and len(value.split()) == 1 and _looks_random(value)


def _mixed(value: str) -> bool:
    return all(any(map(test, value)) for test in (str.isupper, str.islower, str.isdigit))


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _redact(secret: str) -> str:
    """At most a quarter of ``secret``: its first 5 and last 4 characters when long."""
    head, tail = min(5, len(secret) // 6), min(4, len(secret) // 8)
    return secret[:head] + "…" + (secret[-tail:] if tail else "")


def _credentials(value: str) -> bool:
    """A random-looking token, or base64 of ``user:password`` (HTTP Basic)."""
    try:
        return _looks_random(value) or ":" in base64.b64decode(value, validate=True).decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return False


def _anything(secret: str) -> bool:
    return True


_T = r"(?<![\w-])(?P<secret>"  # a token starts where no word or dash precedes it
_KEYS = "the AWS credentials in ~/.aws/credentials"
# (kind, regex with a "secret" group and optional "pre"/"post" kept in the preview, hint, check)
_PATTERNS = [
    (kind, re.compile(regex), hint, valid)
    for kind, regex, hint, valid in (
        ("AWS access key id", r"\b(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{16})\b", _KEYS, _anything),
        ("GitHub token", _T + r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{40,})",
         "the GitHub token in .env", _anything),
        ("Slack token", _T + r"xox[abprs]-[A-Za-z0-9-]{20,})",
         "the Slack token in .env", _has_digit),
        ("Slack webhook URL", r"(?P<pre>https://hooks\.slack\.com/(?:services|workflows|triggers)/)"
         r"(?P<secret>[\w/-]{20,})", "the Slack webhook URL in .env", _anything),
        ("Anthropic API key", _T + r"sk-ant-[\w-]{32,})", "the Anthropic key in .env", _has_digit),
        ("OpenAI API key", _T + r"sk-(?!ant-)[\w-]{20,})", "the OpenAI key in .env", _mixed),
        ("Stripe secret key", _T + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,})",
         "the Stripe key in .env", _anything),
        ("Stripe webhook secret", _T + r"whsec_[A-Za-z0-9]{24,})",
         "the Stripe webhook secret in .env", _anything),
        ("Google API key", _T + r"AIza[\w-]{35})(?![\w-])",
         "the Google API key in .env", _anything),
        ("JWT", _T + r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,})",
         "the session token in the password manager", _anything),
        ("password in a URL", r"(?P<pre>(?<![\w+.-])[A-Za-z][\w+.-]{0,30}://[^\s:/@]*:)"
         r"(?P<secret>[^\s/@]+)(?P<post>@[^\s/@?#]+)", "the database URL in .env", _anything),
        ("authorization header", r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
         r"(?P<pre>(?:Basic|Bearer|Token|Bot) +)(?P<secret>[\w.~+/=-]{8,})",
         "the API token in .env", _credentials),
        ("bearer token", r"(?<![\w-])(?P<pre>Bearer +)(?P<secret>[\w.~+/-]{20,}=*)",
         "the API token in .env", _looks_random),
    )
]  # fmt: skip


def _scan_assignments(text: str) -> list[tuple[SecretFinding, str]]:
    found: list[tuple[SecretFinding, str]] = []
    for match in _ASSIGNMENT.finditer(text):
        name = match["name"]
        parts = [p.lower() for p in _PARTS.findall(name)]
        if not parts or not (
            parts[-1] in _SECRET_WORDS
            or "".join(parts[-2:]) in _KEY_WORDS
            or parts[-1] in _KEY_WORDS
        ):
            continue
        quoted = match["quoted"] is not None
        group = "quoted" if quoted else "bare"
        value = match[group] if quoted else match[group].rstrip(".,:)]}>|*_")
        if _is_placeholder(value) or (not quoted and _REFERENCE.fullmatch(value)):
            continue
        aws = "aws" in parts and "secret" in parts
        if aws and re.fullmatch(r"[A-Za-z0-9/+]{40}", value):
            kind = "AWS secret access key"
        elif (quoted and parts[-1] in _PASSWORD_WORDS and len(value) >= 6) or _random_word(value):
            kind = "generic secret assignment"
        else:
            continue
        start = match.start(group)
        label = name[4:] if name.lower().startswith("the ") else name
        hint = "the AWS credentials in ~/.aws/credentials" if aws else f"the {label} in .env"
        found.append((SecretFinding(kind, start, start + len(value), _redact(value)), hint))
    return found


def _scan(text: str) -> list[tuple[SecretFinding, str]]:
    found: list[tuple[SecretFinding, str]] = []
    for match in _PRIVATE_KEY.finditer(text):
        header = match["secret"].split("-----")[1]
        found.append((SecretFinding("private key", *match.span(), f"-----{header}-----…"),
                      "the deploy key in ~/.ssh"))  # fmt: skip
    for kind, regex, hint, valid in _PATTERNS:
        for match in regex.finditer(text):
            secret = match["secret"]
            if _is_placeholder(secret) or not valid(secret):
                continue
            groups = match.groupdict()
            preview = (groups.get("pre") or "") + _redact(secret) + (groups.get("post") or "")
            found.append((SecretFinding(kind, *match.span("secret"), preview), hint))
    found += _scan_assignments(text)
    kept: list[tuple[SecretFinding, str]] = []
    for finding, hint in found:  # most specific first: drop later overlapping findings
        if all(finding.end <= k.start or finding.start >= k.end for k, _ in kept):
            kept.append((finding, hint))
    return sorted(kept, key=lambda pair: pair[0].start)


def find_secrets(text: str) -> list[SecretFinding]:
    """Everything in ``text`` that looks like a credential, in text order."""
    return [finding for finding, _ in _scan(text)]


def _a(kind: str) -> str:
    return ("an " if kind[0] in "AEIOUaeiou" else "a ") + kind


def secret_refusal(text: str) -> str | None:
    """None if ``text`` looks clean, else one sentence a model can act on."""
    found = _scan(text)
    if not found:
        return None
    first, hint = found[0]
    what = f"{_a(first.kind)} ({first.preview})"
    if len(found) > 1:
        others = ", ".join(_a(finding.kind) for finding, _ in found[1:])
        what += f" and {len(found) - 1} more ({others})"
    return (
        f"this looks like {what}; nothing was written. Never store credentials in memory: "
        f"reference them by name, such as '{hint}'."
    )
