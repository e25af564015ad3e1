"""The corpus of bench/secrets.py: generated credentials, and ordinary technical notes.

Credentials are made at run time from a seeded generator, never stored, so no
token-shaped literal sits in the repository for a secret scanner to trip on. Each
kind follows its provider's documented shape (prefix, length, alphabet) and is put
in five contexts: prose, an assignment, JSON, a .env line and a code snippet.
Kinds without a prefix of their own (an AWS secret key, a password) are always
named near them, as a person would; the others sometimes stand alone.

A shape is a template: ``{36}`` is 36 letters and digits (mixing upper, lower and
digits, as real tokens do), ``{32:hex}`` 32 characters of another alphabet,
``{AKIA|ASIA}`` one of the choices, ``{24|99:alnum}`` one of two lengths; a callable
makes the shapes a template cannot (PEM blocks, JWTs, a service-account file).

The technical notes (ordinary memories that must not be refused) are made from
``NOTE_TEMPLATES`` by ``write_notes()`` into ``bench/data/secrets_notes.json``,
once; the bench reads that file. They hold what a detector must let through:
hashes, UUIDs, base64, public keys, commit shas, docker digests, paths, URLs
without passwords, "password reset", "API key rotation" and placeholders.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NOTES = Path(__file__).resolve().parent / "data" / "secrets_notes.json"
FRESH = NOTES.with_name("secrets_fresh.json")
LOCOMO = Path("/work/shared/bench/locomo10-dev.json")

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
ALPHABETS = {
    "alnum": ALNUM, "hex": "0123456789abcdef", "HEX": "0123456789ABCDEF", "digits": DIGITS,
    "b64": ALNUM + "+/", "url": ALNUM + "_-", "letters": UPPER + LOWER, "lower": LOWER,
    "aws": UPPER + "234567", "upper": UPPER + DIGITS, "bech32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
    "azure": ALNUM + "_~.-", "pw": ALNUM + "!#%&*-_",
}  # fmt: skip


@dataclass(frozen=True)
class Sample:
    kind: str
    context: str
    text: str
    secret: str
    """the part of ``text`` a finding must overlap"""


def pick(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """``n`` characters; from ALNUM always some upper, lower and digits, as real tokens."""
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        mixed = all(any(c in s for c in value) for s in (UPPER, LOWER, DIGITS))
        if alphabet != ALNUM or n < 12 or mixed:
            return value


def expand(rng: random.Random, shape: str) -> str:
    """A value of ``shape``: ``{n}``, ``{n:alphabet}``, ``{n-m:alphabet}``, ``{n|m:alphabet}``
    (one of these lengths), ``{a|b}`` (one of these strings)."""

    def one(match: re.Match[str]) -> str:
        body = match[1]
        if not re.fullmatch(r"\d+(?:-\d+)?(?::\w+)?|\d+(?:\|\d+)+:\w+", body):
            return rng.choice(body.split("|"))  # {live|test}, {443|8443}: one of these
        size, _, alphabet = body.partition(":")
        size = rng.choice(size.split("|"))  # {24|99:alnum}: one of these lengths
        low, _, high = size.partition("-")
        n = rng.randrange(int(low), int(high) + 1) if high else int(low)
        return pick(rng, n, ALPHABETS[alphabet or "alnum"])

    return re.sub(r"\{([^{}]+)\}", one, shape)


def pem(rng: random.Random, label: str, first: str = "MII", lines: int = 6) -> str:
    body = first + pick(rng, 64 * lines - len(first), ALPHABETS["b64"])
    rows = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(rows) + f"\n-----END {label}-----"


def _jwt(rng: random.Random) -> str:
    def seg(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    claims = {"sub": str(rng.randrange(10**6, 10**9)), "iat": rng.randrange(16 * 10**8, 10**9 * 2)}
    return f"{seg({'alg': 'HS256', 'typ': 'JWT'})}.{seg(claims)}.{expand(rng, '{43:url}')}"


def _gcp_json(rng: random.Random) -> str:
    """A service-account key file as Google hands it out: the PEM inside with \\n escapes."""
    project = rng.choice(["acme-prod", "billing-421", "data-lake-7"])
    return json.dumps({
        "type": "service_account", "project_id": project,
        "private_key_id": expand(rng, "{40:hex}"),
        "private_key": pem(rng, "PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 12) + "\n",
        "client_email": f"ci-deployer@{project}.iam.gserviceaccount.com",
        "client_id": str(rng.randrange(10**20, 10**21)),
    })  # fmt: skip


def _with_word(rng: random.Random, shape: str) -> str:
    """A token of ``shape`` whose random body holds a placeholder word, as bodies can."""
    value = expand(rng, shape)
    word = rng.choice(["your", "todo", "example", "Your", "TODO", "Example", "dummy"])
    at = rng.randrange(len(value) // 2, len(value) - len(word) - 2)
    return value[:at] + word + value[at + len(word) :]


def _password(rng: random.Random) -> str:
    words = ["Tiger", "Maple", "Harbor", "Violet", "Comet", "Falcon", "Juniper", "Quartz"]
    human = rng.choice(words) + rng.choice(words).lower() + str(rng.randrange(10, 9999))
    return rng.choice([human + rng.choice("!#$%&*?"), expand(rng, "{14-30:pw}")])


_FINE = "github_pat_{22}_{59}"
_PROJ = "sk-proj-{74:url}T3BlbkFJ{74:url}"
_URL = (
    "{postgres|mysql|redis|mongodb+srv|amqp}://{app|admin|svc_etl|deploy}:{12-28:url}"
    "@{db.internal|cache-01.prod|cluster0.ab12c.mongodb.net|mq.acme.io}:5432/main"
)
# (kind, what a person calls it, env name, shape, named: the prose always names it)
Shape = str | Callable[[random.Random], str]
KINDS: list[tuple[str, str, str, Shape, bool]] = [
    ("AWS access key id", "AWS access key id", "AWS_ACCESS_KEY_ID", "{AKIA|ASIA}{16:aws}", False),
    ("AWS secret access key", "AWS secret key", "AWS_SECRET_ACCESS_KEY", "{40:b64}", True),
    ("GitHub classic token", "GitHub token", "GITHUB_TOKEN", "ghp_{36}", False),
    ("GitHub OAuth token", "GitHub OAuth token", "GH_OAUTH_TOKEN", "gho_{36}", False),
    ("GitHub app token", "GitHub app token", "GH_APP_TOKEN", "{ghs|ghu}_{36}", False),
    ("GitHub fine-grained token", "GitHub token", "GITHUB_PAT", _FINE, False),
    ("GitHub fine-grained token, a word in its body", "GitHub token", "GITHUB_PAT",
     lambda r: _with_word(r, _FINE), False),
    ("GitLab token", "GitLab token", "GITLAB_TOKEN", "glpat-{20:url}", False),
    ("Slack bot token", "Slack bot token", "SLACK_BOT_TOKEN",
     "xoxb-{12:digits}-{13:digits}-{24}", False),
    ("Slack user token", "Slack token", "SLACK_USER_TOKEN",
     "xoxp-{12:digits}-{12:digits}-{13:digits}-{32:hex}", False),
    ("Slack webhook URL", "Slack webhook", "SLACK_WEBHOOK_URL",
     "https://hooks.slack.com/services/T{8:upper}/B{10:upper}/{24}", False),
    ("OpenAI project key", "OpenAI key", "OPENAI_API_KEY", _PROJ, False),
    ("OpenAI project key, a word in its body", "OpenAI key", "OPENAI_API_KEY",
     lambda r: _with_word(r, _PROJ), False),
    ("OpenAI legacy key", "OpenAI key", "OPENAI_API_KEY", "sk-{20}T3BlbkFJ{20}", False),
    ("Anthropic key", "Anthropic key", "ANTHROPIC_API_KEY", "sk-ant-api03-{93:url}AA", False),
    ("Stripe secret key", "Stripe key", "STRIPE_SECRET_KEY", "sk_{live|test}_{24|99:alnum}", False),
    ("Stripe restricted key", "Stripe restricted key", "STRIPE_RESTRICTED_KEY",
     "rk_live_{24|99:alnum}", False),
    ("Stripe webhook secret", "Stripe webhook secret", "STRIPE_WEBHOOK_SECRET",
     "whsec_{32}", False),
    ("Google API key", "Google Maps key", "GOOGLE_API_KEY", "AIza{35:url}", False),
    ("GCP service-account JSON", "service account key", "GOOGLE_CREDENTIALS", _gcp_json, False),
    ("JWT", "session token", "SESSION_TOKEN", _jwt, False),
    ("RSA private key", "deploy key", "DEPLOY_KEY", lambda r: pem(r, "RSA PRIVATE KEY"), False),
    ("OpenSSH private key", "SSH key", "SSH_PRIVATE_KEY",
     lambda r: pem(r, "OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAA"), False),
    ("EC private key", "signing key", "SIGNING_KEY",
     lambda r: pem(r, "EC PRIVATE KEY", "MHcCAQEE", 3), False),
    ("PGP private key", "PGP key", "PGP_PRIVATE_KEY",
     lambda r: pem(r, "PGP PRIVATE KEY BLOCK", "lQdGBF", 8), False),
    ("npm token", "npm token", "NPM_TOKEN", "npm_{36}", False),
    ("Hugging Face token", "Hugging Face token", "HF_TOKEN", "hf_{34:letters}", False),
    ("SendGrid key", "SendGrid key", "SENDGRID_API_KEY", "SG.{22:url}.{43:url}", False),
    ("Twilio API key", "Twilio API key", "TWILIO_API_KEY", "SK{32:hex}", False),
    ("Azure storage connection string", "storage connection string",
     "AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=https;AccountName=acme{4:lower};"
     "AccountKey={86:b64}==;EndpointSuffix=core.windows.net", False),
    ("Azure AD client secret", "Azure client secret", "AZURE_CLIENT_SECRET",
     "{3}{1:digits}Q~{34:azure}", False),
    ("Shopify access token", "Shopify token", "SHOPIFY_ACCESS_TOKEN", "shpat_{32:hex}", False),
    ("DigitalOcean token", "DigitalOcean token", "DIGITALOCEAN_TOKEN", "dop_v1_{64:hex}", False),
    ("PyPI token", "PyPI token", "PYPI_TOKEN", "pypi-AgEIcHlwaS5vcmc{60-160:url}", False),
    ("Databricks token", "Databricks token", "DATABRICKS_TOKEN", "dapi{32:hex}", False),
    ("Telegram bot token", "Telegram bot token", "TELEGRAM_BOT_TOKEN",
     "{9-10:digits}:AA{33:url}", False),
    ("Mailchimp key", "Mailchimp key", "MAILCHIMP_API_KEY", "{32:hex}-us{1-2:digits}", False),
    ("Mailgun key", "Mailgun key", "MAILGUN_API_KEY", "key-{32:hex}", False),
    ("Heroku key", "Heroku key", "HEROKU_API_KEY", "HRKU-AA{58:url}", False),
    ("Vault token", "Vault token", "VAULT_TOKEN", "hvs.{90:url}", False),
    ("age secret key", "age key", "AGE_SECRET_KEY", "AGE-SECRET-KEY-1{58:bech32}", False),
    ("Atlassian token", "Jira token", "JIRA_API_TOKEN", "ATATT3xFfGF0{171:url}={8:HEX}", False),
    ("Linear key", "Linear key", "LINEAR_API_KEY", "lin_api_{40}", False),
    ("Postman key", "Postman key", "POSTMAN_API_KEY", "PMAK-{24:hex}-{34:hex}", False),
    ("Doppler token", "Doppler token", "DOPPLER_TOKEN", "dp.pt.{43}", False),
    ("Grafana service account token", "Grafana token", "GRAFANA_TOKEN",
     "glsa_{32}_{8:hex}", False),
    ("Groq key", "Groq key", "GROQ_API_KEY", "gsk_{52}", False),
    ("Replicate token", "Replicate token", "REPLICATE_API_TOKEN", "r8_{37}", False),
    ("Sentry user token", "Sentry token", "SENTRY_AUTH_TOKEN", "sntryu_{64:hex}", False),
    ("Discord webhook URL", "Discord webhook", "DISCORD_WEBHOOK_URL",
     "https://discord.com/api/webhooks/{18:digits}/{68:url}", False),
    ("Datadog API key", "Datadog API key", "DD_API_KEY", "{32:hex}", True),
    ("password in a URL", "database URL", "DATABASE_URL", _URL, False),
    ("password assignment", "database password", "DB_PASSWORD", _password, True),
    ("API key assignment", "API key", "PAYMENTS_API_KEY", "{32|40|48:alnum}", True),
    ("bearer token", "bearer token", "API_TOKEN", "{32-64:url}", True),
]  # fmt: skip

_PROSE_NAMED = [
    "the {name} is {s}",
    "Note for later: our {name} is {s} (rotate it in May).",
    "Sam sent me the {name} over chat: {s}. Use it for the nightly job.",
    "Remember, the {name} for staging: {s}",
    "I set the {name} to {s} yesterday, before the migration.",
]
_PROSE_BARE = [
    "use {s} for the nightly job",
    "Sam pasted {s} into the channel by mistake.",
    "Working now with {s}, after the reset.",
]
_CODE = [
    '```python\nclient = Client(api_key="{s}", timeout=30)\n```',
    "```js\nconst token = '{s}';\nawait fetch(url, {{ headers: {{ 'X-Token': token }} }});\n```",
    '```bash\ncurl -s https://api.example.org/v1/jobs -H "X-Api-Key: {s}"\n```',
    '```go\nconst apiKey = "{s}"\n```',
]
_BLOCKS = {"password in a URL", "Slack webhook URL", "Discord webhook URL"}


def _contexts(rng: random.Random, kind: str, name: str, env: str, s: str, named: bool) -> dict:
    key = env.lower()
    prose = rng.choice(_PROSE_NAMED if named or rng.random() < 0.6 else _PROSE_BARE)
    text = {
        "prose": prose.format(name=name, s=s),
        "assignment": rng.choice([f'{key} = "{s}"', f"{key}: {s}", f'{key} := "{s}"']),
        "json": json.dumps({key: s, "region": "eu-west-1"}, indent=rng.choice([None, 2])),
        ".env": f'{env}="{s}"' if "\n" in s else f"{env}={s}",
        "code": f'```python\n{key} = "{s}"\n```' if named else rng.choice(_CODE).format(s=s),
    }
    if kind == "bearer token":
        text["prose"] = f"the API wants Authorization: Bearer {s} on every call"
        text["code"] = f'```bash\ncurl -H "Authorization: Bearer {s}" https://api.acme.io/me\n```'
        text["json"] = json.dumps({"headers": {"Authorization": f"Bearer {s}"}})
    elif kind == "GCP service-account JSON":
        text["json"] = s
        text["prose"] = f"the {name} for the deployer: {s}"
        text["code"] = f"```python\ninfo = json.loads('{s}')\n```"
    elif kind in _BLOCKS or "\n" in s:
        text["code"] = f'```python\n{key} = """{s}"""\n```'
    return text


def credentials(seed: int = 12, per_context: int = 2) -> list[Sample]:
    """Every kind in every context, ``per_context`` times with fresh bodies."""
    rng = random.Random(seed)
    samples = []
    for kind, name, env, shape, named in KINDS:
        for _ in range(per_context):
            secret = shape(rng) if callable(shape) else expand(rng, shape)
            for context, text in _contexts(rng, kind, name, env, secret, named).items():
                in_text = secret if secret in text else json.dumps(secret)[1:-1]
                assert in_text in text, (kind, context)
                samples.append(Sample(kind, context, text, in_text))
    return samples


def fresh_credentials(seed: int = 12) -> tuple[list[Sample], list[str]]:
    """The held-out set of ``FRESH``: its kinds and all of KINDS in its contexts, and its
    notes. Written after the detector was built from the rest, measured once."""
    data = json.loads(FRESH.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    kinds = [(k, n, e, s, False) for k, n, e, s in data["kinds"]] + KINDS
    samples = []
    for kind, name, env, shape, _ in kinds:
        for context in data["contexts"]:
            secret = shape(rng) if callable(shape) else expand(rng, shape)
            fill = {"s": secret, "name": name, "env": env, "key": env.lower()}
            text = context.format(key_section=env.split("_")[0].lower(), **fill)
            samples.append(Sample(kind, "fresh", text, secret))
    return samples, data["notes"]


def locomo_turns(path: Path = LOCOMO) -> list[str]:
    """Every turn's text of the LoCoMo dev conversations."""
    turns = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [turn["text"] for turn in session]
    return turns


# -- technical notes: what must pass -----------------------------------------------------

NOTE_TEMPLATES = [
    "Fixed the {word} flake in {40:hex}; the revert is {7:hex}.",
    "git cherry-pick {7:hex} onto release/{1:digits}.{2:digits} before Friday.",
    "Pinned the image to ghcr.io/acme/{word}@sha256:{64:hex} after the CVE scan.",
    "docker pull registry.acme.io/{word}:{1:digits}.{2:digits} (digest sha256:{64:hex})",
    "Request {uuid} failed with a 502 at the {word} gateway.",
    "tenant_id: {uuid}, plan: {team|free|enterprise}",
    "The {word} export's md5 is {32:hex} and its sha256 is {64:hex}.",
    "checksum: sha256:{64:hex} (verified against the release page)",
    "trace_id={32:hex} span_id={16:hex} in the {word} logs",
    "The payload is base64: {b64}",
    "Base64 of the config: {b64json}",
    "Screenshot stored inline: data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{40:b64}",
    "My public key: {ssh} {user}@laptop",
    "Added {user}'s key to authorized_keys: {ssh}",
    "The server cert:\n{cert}",
    "Public key for verifying webhooks:\n{pubkey}",
    "PGP fingerprint: {4:HEX} {4:HEX} {4:HEX} {4:HEX} {4:HEX}  {4:HEX} {4:HEX} {4:HEX} {4:HEX}",
    "The {word} config lives in ~/.config/{word}/config.toml and /etc/{word}/{word}.yaml.",
    "Keys live in ~/.ssh/id_ed25519 and ~/.aws/credentials on {user}'s laptop; not in here.",
    "Logs: /var/log/{word}/{word}-20{2:digits}.log, rotated daily",
    "Dashboard: https://{host}:{443|3000|8443}/d/{9}/{word}?orgId=1&from=now-6h",
    "Clone with git@github.com:acme/{word}.git or https://{user}@github.com/acme/{word}.git",
    "DATABASE_URL=postgres://{user}@{host}:5432/{word} (the password comes from the vault)",
    "redis://{host}:6379/{1:digits} is the {word} cache.",
    "s3://acme-{word}-backups/20{2:digits}/{12:hex}.tar.zst",
    "The password reset flow for {word} sends a link that expires in {2:digits} minutes.",
    "Password reset emails go through {SES|SendGrid|Postmark}; template id {6:digits}.",
    "API key rotation: every {30|60|90} days, owned by the {word} team.",
    "We rotate the {Stripe|OpenAI|Twilio|SendGrid} API key quarterly; it is in 1Password.",
    "export OPENAI_API_KEY={placeholder}",
    'api_key = "{placeholder}"  # set it from the environment',
    "{NPM_TOKEN|HF_TOKEN|GITLAB_TOKEN} is a CI secret: ${{{{ secrets.{NPM_TOKEN|HF_TOKEN} }}}}",
    "In the README the example key is {placeholder}; readers replace it.",
    "AWS documents AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.",
    'token = os.environ["{GITHUB_TOKEN|HF_TOKEN|NPM_TOKEN}"]',
    'password = getpass.getpass("{word} password: ")',
    'secret_name = "prod/{word}/db"  # the Secrets Manager entry, not the secret',
    "max_tokens={256|1024|4096}, temperature=0.{1:digits}, model=gpt-4o-mini",
    "The primary key is ({word}_id, created_at); the partition key is tenant_id.",
    "cache key: user:{5:digits}:profile:v{1:digits}",
    "npm_ tokens are granular now; hf_ tokens are read or write; glpat- is GitLab's.",
    "SendGrid keys start with SG. and Twilio API keys with SK; neither goes in notes.",
    "The Stripe prefixes: sk_live_ for secret keys, pk_live_ for publishable ones.",
    "pk_live_{24} is the publishable Stripe key for the checkout page.",
    "Build 20{2:digits}.{1:digits}.{3:digits} of {word} shipped; artifact {word}-{8:hex}.whl",
    "Version v{1:digits}.{2:digits}.{1:digits}-rc.{1:digits}+build.{7:hex}",
    "kubectl create secret generic {word}-creds --from-literal=password=$DB_PASSWORD",
    'The ETag was W/"{8:hex}-{4:hex}" and the cache hit ratio {2:digits}%.',
    "Stripe test card 4242 4242 4242 4242, any CVC, for {word} demos.",
    "getUserAccessTokenFromCache() returns None when the {word} session expired.",
    "auth: {oauth2|saml|none|basic}\ntimeout: {2:digits}s\nretries: {1:digits}",
    "| key | value |\n|---|---|\n| token budget | {4:digits} |\n| password policy | 12 chars |",
    "The {word} service gets a short-lived token from the metadata server; nothing stored.",
    "MAC {2:hex}:{2:hex}:{2:hex}:{2:hex}:{2:hex}:{2:hex}, IP 10.{2:digits}.{1:digits}.{2:digits}",
    "Object id {24:hex} in the {word} collection is the broken one.",
    "The API version header is 2024-0{1:digits}-01; key_id rotates with it.",
    "Secret Santa at the {word} offsite: budget {2:digits} euros.",
    "Authorization: Bearer <token> (get one from `acme login`)",
    "curl -u {user} https://{host}/api (it prompts for the password)",
    "The {word} job reads TOKEN_FILE=/run/secrets/{word}_token at start.",
    "Run `openssl rand -hex 32` to make a new {word} signing key; keep it out of here.",
    "Invoices reference order {10:upper} only.",
    "sha1 of the {word} dataset: {40:hex} (for dedup only)",
    "Ticket {ACME|OPS|INFRA}-{4:digits}: the {word} key expired on 2026-0{1:digits}-1{1:digits}.",
]
_FILL = {
    "word": "deploy|billing|search|ingest|auth|gateway|scheduler|exporter",
    "user": "alice|bob|priya|chen|marta|deploy|ci",
    "host": "db.internal|cache-01.prod|api.acme.io|grafana.ops.acme.io|localhost",
    "placeholder": "$OPENAI_API_KEY|<your-key>|sk-...|AKIAIOSFODNN7EXAMPLE|${STRIPE_SECRET_KEY}|"
    "<token>|YOUR_API_KEY|xxxxxxxxxxxxxxxx|ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx|"
    "{{ vault_token }}|changeme|sk_test_...|********|hf_...|npm_XXXXXXXX|glpat-<redacted>",
}
_SENTENCES = ["Ship the migration after the freeze.", "The nightly job failed twice.",
              "Caption: a dog on a beach at sunset.", "Invoice 4411 is paid."]  # fmt: skip


def _note(rng: random.Random, template: str) -> str:
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    made = {
        "uuid": lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "b64": lambda: b64(rng.choice(_SENTENCES)),
        "b64json": lambda: b64(json.dumps({"env": "prod", "replicas": rng.randrange(1, 9)})),
        "ssh": lambda: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + pick(rng, 43, ALPHABETS["b64"]),
        "cert": lambda: pem(rng, "CERTIFICATE", "MIID", 4),
        "pubkey": lambda: pem(rng, "PUBLIC KEY", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", 3),
    }

    def one(match: re.Match[str]) -> str:
        name = match[1]
        if name in made:
            return made[name]()
        if name in _FILL:
            return rng.choice(_FILL[name].split("|"))
        return expand(rng, "{" + name + "}")

    # {{ and }} stand for literal braces, as in str.format
    parts = template.split("{{")
    parts = [re.sub(r"(?<!\})\{([^{}]+)\}", one, part.replace("}}", "\0")) for part in parts]
    return "{".join(parts).replace("\0", "}")


def write_notes(count: int = 360, seed: int = 1212) -> list[str]:
    """Write ``count`` distinct notes (each template used about equally) to NOTES."""
    rng = random.Random(seed)
    notes: dict[str, None] = {}
    for n in range(count * 20):
        if len(notes) == count:
            break
        notes[_note(rng, NOTE_TEMPLATES[n % len(NOTE_TEMPLATES)])] = None
    NOTES.write_text(json.dumps(list(notes), indent=1, ensure_ascii=False) + "\n", "utf-8")
    return list(notes)


if __name__ == "__main__":
    print(f"wrote {len(write_notes())} notes to {NOTES}")
