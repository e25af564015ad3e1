"""Spotting credentials before they are written to memory.

Never store secrets in memory files: reference them by name ("the Stripe key in
.env"). ``secret_refusal(text)`` is the check every store runs before a write (None,
or a reason); ``find_secrets(text)`` lists what it saw (the chat importer redacts
those spans).

Three layers, most specific first; a later finding overlapping an earlier one is
dropped, so each secret is found once, under its most specific kind:

1. memdir's own token shapes (``memdir.safety.secret_shapes``): private key blocks (also
   inside JSON with ``\\n`` escapes, as in a Google service-account file), AWS,
   GitHub, Slack, Discord webhooks, Anthropic, OpenAI, Groq, Replicate, xAI, Stripe,
   Google, JWTs, Azure storage keys (``AccountKey=``), Telegram bot tokens.
2. gitleaks' published rules (``memdir.safety.secret_rules``, vendored with its licence):
   about 220 providers (npm, GitLab, Hugging Face, SendGrid, Twilio, Azure AD,
   Shopify, PyPI, Databricks, Vault, ...), each run as gitleaks runs it; in prose a
   secret may end a sentence, and "the Mailchimp key is X" counts as "... = X".
3. What no provider rule says, by shape and name:
   - passwords in URLs: ``scheme://user:password@host``. ``user@host`` and
     ``host:8080`` have no password, so they do not match;
   - Authorization headers (Bearer/Basic/Token) and a bare ``Bearer <token>``;
   - assignments (``name = value``, ``name: value``, JSON, YAML, .env, ``export``,
     and prose: "the AWS secret key is X") whose name *ends* in a secret word:
     password, passwd, passphrase, pwd, pass, secret, token, credential(s), or
     api/access/secret/private/signing/encryption key. So ``DB_PASSWORD=`` and
     ``SECRET_TOKEN=`` count; ``password_reset_url``, ``max_tokens`` and "API key
     rotation:" do not. A quoted value under a password name is flagged at 6+
     characters, spaces and all (``"correct horse battery staple"`` is a literal
     password). Any other value (and any value after "is") must be one word of 8+
     characters, not a path, URL or code reference (``settings.X``,
     ``os.environ[...]``, ``getpass()``), that looks random: letters with digits,
     or 16+ characters, a fifth or more each upper and lower case, at 3.5+ bits of
     Shannon entropy per character (``tokenFromVault``, "token-from-vault" are
     not). An ``aws_secret_access_key`` value of 40 base64 characters is always
     flagged;
   - last, gitleaks' generic rule (a value near "auth", "key", "token", "secret",
     "password" ..., with entropy and a list of ordinary words), kept to values that
     look random in some part ("5432/scheduler" does not), a bare hex string (a
     sha, a checksum) only under a secret name ("api_key: <hex>", not
     "dataset: <sha1>").

Placeholders are never flagged, whatever the layer: values starting with ``$ < {
% [`` (``$OPENAI_API_KEY``, ``${VAR}``, ``<your-key>``, ``{{ key }}``), masks
(``xxxx``, ``***``, ``...``, ``•••``), bare stand-ins such as password, secret,
changeme, admin, null, and values holding a placeholder word (example,
placeholder, redacted, your, dummy, changeme, replaceme, todo, sample) as a clear
word: a part of its own between separators (``YOUR_API_KEY``, ``sk-your-key``), or
at a part's start or end, maybe with key/token/secret after it
(``AKIAIOSFODNN7EXAMPLE``, ``...bPxRfiCYEXAMPLEKEY``, AWS's documented examples).
The same letters inside a random body (``...k3yourQ9...``) are chance, not a
placeholder: such a key is still refused. ``changeme`` is a placeholder:
templates ship it, and "the default is changeme" leaks nothing. Not caught, by
design: bare high-entropy strings with no prefix or secret name (shas, UUIDs,
checksums, ids are common in notes).

A finding's ``start``/``end`` span the secret itself (the value, not its name);
its ``preview`` shows at most a quarter of it and never more than its first 5
and last 4 characters, e.g. "sk-pr…9f2Q" (URL previews keep scheme, user and
host; a private key's is its header). Speed: every rule of every layer has
keywords; one Aho-Corasick pass finds them all (``secret_rules.Keywords``), and a
rule runs only where one occurs, so a 2 KB memory costs about 0.1-0.5 ms
(``bench/secrets.py``). The rules load on the first check, not at import.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

from memdir.safety.secret_rules import Keywords, rules
from memdir.safety.secret_shapes import (
    ENV,
    HEX,
    SEPARATORS,
    SHAPE_KEYWORDS,
    SHAPES,
    Found,
    SecretFinding,
    is_placeholder,
    looks_random,
    random_word,
    redact,
    scan_private_keys,
    scan_telegram,
    scan_urls,
)

__all__ = ["SecretFinding", "find_secrets", "secret_refusal"]

_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(.*)?|[A-Za-z_][\w.]*[(\[].*")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_WORDS = {"password", "passwd", "passphrase", "pwd", "pass"}
_SECRET_WORDS = _PASSWORD_WORDS | {"secret", "token", "credential", "credentials"}
_KEY_WORDS = {"apikey", "accesskey", "secretkey", "privatekey", "signingkey", "encryptionkey"}
_ASSIGNMENT = re.compile(
    r"(?P<word>(?i:password|passwd|passphrase|pwd|pass|secret|token|credentials?|key))[\"'*`]{0,3}"
    r"(?:[ \t]*(?:=>|:=|(?::[ \t]*[\w\[\]. |]{1,30}?[ \t]*)?=|:)|[ \t]+(?P<prose>is|was):?)[ \t]*"
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{1,200})(?P=q)|(?P<bare>[^\s\"'`,;]{1,200}))"
)
_ASSIGNMENT_WORDS = ("password", "passwd", "passphrase", "pwd", "pass", "secret", "token",
                     "credential", "key")  # fmt: skip
_NAME_CHAR = re.compile(r"[\w.-]")
_PROSE_WORD = re.compile(r"(?<![\w.-])[A-Za-z][\w-]{0,30} $")

# gitleaks rules whose kind is one of memdir's own: the same secret gets the same name
_KINDS = {
    "aws-access-token": "AWS access key id", "github-pat": "GitHub token",
    "github-oauth": "GitHub token", "github-app-token": "GitHub token",
    "github-refresh-token": "GitHub token", "github-fine-grained-pat": "GitHub token",
    "slack-bot-token": "Slack token", "slack-user-token": "Slack token",
    "slack-webhook-url": "Slack webhook URL", "openai-api-key": "OpenAI API key",
    "anthropic-api-key": "Anthropic API key", "stripe-access-token": "Stripe secret key",
    "gcp-api-key": "Google API key", "jwt": "JWT", "private-key": "private key",
    "generic-api-key": "generic secret assignment",
}  # fmt: skip
_NAMES = {
    "aws": "AWS", "gcp": "GCP", "api": "API", "pat": "personal access token", "id": "id",
    "github": "GitHub", "gitlab": "GitLab", "npm": "npm", "huggingface": "Hugging Face",
    "sendgrid": "SendGrid", "digitalocean": "DigitalOcean", "pypi": "PyPI", "jwt": "JWT",
    "openai": "OpenAI", "ad": "AD", "ci": "CI", "cicd": "CI/CD", "rrt": "runner registration token",
    "ptt": "pipeline trigger token", "scim": "SCIM", "tf": "Terraform", "url": "URL",
    "mailchimp": "Mailchimp", "hashicorp": "HashiCorp", "planetscale": "PlanetScale",
    "launchdarkly": "LaunchDarkly", "linkedin": "LinkedIn", "newrelic": "New Relic",
    "1password": "1Password", "cloudflare": "Cloudflare", "ca": "CA", "yaml": "YAML",
}  # fmt: skip


@cache
def _kind(rule_id: str) -> str:
    """A name for a gitleaks rule: "npm-access-token" -> "npm access token"."""
    if rule_id in _KINDS:
        return _KINDS[rule_id]
    first, *rest = rule_id.split("-")
    return " ".join([_NAMES.get(first, first.capitalize()), *(_NAMES.get(w, w) for w in rest)])


@cache
def _keywords() -> Keywords:
    return Keywords(SHAPE_KEYWORDS | set(_ASSIGNMENT_WORDS) | rules().by_keyword.keys())


def _name_before(text: str, at: int) -> str | None:
    """The name a secret word at ``at`` ends: an identifier and up to two words before it."""
    start = at
    while start > 0 and at - start < 64 and _NAME_CHAR.match(text[start - 1]):
        start -= 1
    if start and _NAME_CHAR.match(text[start - 1]):
        return None  # too long for a name
    if start < at and not (text[start].isalpha() or text[start] == "_"):
        return None
    for _ in range(2):
        word = _PROSE_WORD.search(text, max(0, start - 32), start)
        if word is None:
            break
        start = word.start()
    return text[start:at]


def _secret_name(name: str) -> bool:
    parts = [p.lower() for p in _PARTS.findall(name)]
    return bool(parts) and (
        parts[-1] in _SECRET_WORDS or "".join(parts[-2:]) in _KEY_WORDS or parts[-1] in _KEY_WORDS
    )


def _scan_assignments(text: str, hits: dict[str, list[int]]) -> Iterator[Found]:
    starts = sorted({p for k in _ASSIGNMENT_WORDS for p in hits.get(k, ())})
    for at in starts:
        match = _ASSIGNMENT.match(text, at)
        prefix = _name_before(text, at) if match else None
        if match is None or prefix is None:
            continue
        name = prefix + match["word"]
        identifier = name.rsplit(" ", 1)[-1]
        if not _secret_name(name):
            continue
        quoted = match["quoted"] is not None
        group = "quoted" if quoted else "bare"
        value = match[group] if quoted else match[group].rstrip(".,:)]}>|*_")
        if is_placeholder(value) or (not quoted and _REFERENCE.fullmatch(value)):
            continue
        parts = [p.lower() for p in _PARTS.findall(name)]
        aws = "aws" in parts and "secret" in parts
        password = quoted and parts[-1] in _PASSWORD_WORDS and len(value) >= 6
        if aws and re.fullmatch(r"[A-Za-z0-9/+]{40}", value):
            kind = "AWS secret access key"
        elif (password and not match["prose"]) or random_word(value):
            kind = "generic secret assignment"
        else:
            continue
        start = match.start(group)
        label = identifier if _secret_name(identifier) else name.removeprefix("the ")
        hint = "the AWS credentials in ~/.aws/credentials" if aws else f"the {label} in .env"
        yield SecretFinding(kind, start, start + len(value), redact(value)), hint


def _named(text: str, at: int) -> bool:
    """Whether the value at ``at`` follows a secret name and an operator (or "is")."""
    end = len(text[:at].rstrip(" \t\"'=:>,|?`"))
    for connective in (" is", " was"):
        if text.startswith(connective, end - len(connective)):
            end -= len(connective)
    name = _name_before(text, end)
    return name is not None and _secret_name(name)


def _scan_gitleaks(text: str, hits: dict[str, list[int]], generic: bool) -> Iterator[Found]:
    for match in rules().scan(text, hits, generic):
        secret = text[match.start : match.end]
        if is_placeholder(secret):
            continue
        # The generic rule takes any value near "auth", "key", "api"...: it must look
        # random in some part ("5432/scheduler" does not), and a bare hex string (a sha,
        # a checksum) counts only under a secret name ("api_key: <hex>", not "dataset:").
        if generic and not (
            any(looks_random(part) for part in SEPARATORS.split(secret))
            and (not HEX.fullmatch(secret) or _named(text, match.start))
        ):
            continue
        kind = _kind(match.rule)
        what = "secret" if kind == "generic secret assignment" else kind
        yield SecretFinding(kind, match.start, match.end, redact(secret)), f"the {what} {ENV}"


def _scan(text: str) -> list[Found]:
    hits = _keywords().find(text)
    if not hits:
        return []
    found: list[Found] = [*scan_private_keys(text, hits)]
    for shape in SHAPES:
        found += shape.scan(text, hits)
    found += scan_telegram(text, hits)
    found += _scan_gitleaks(text, hits, generic=False)
    found += scan_urls(text, hits)
    found += _scan_assignments(text, hits)
    found += _scan_gitleaks(text, hits, generic=True)
    kept: list[Found] = []
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
