"""LoCoMo (``locomo10.json``): a list of samples, one Conversation per session.

A sample is ``{sample_id, conversation: {speaker_a, speaker_b, session_N: [turns],
session_N_date_time: "1:56 pm on 8 May, 2023"}, qa, ...}``; everything but
``sample_id`` and ``conversation`` is ignored, as are date-times of sessions that
have no turn list. Each turn ``{speaker, dia_id, text, blip_caption?}`` becomes a
``user`` message named after its speaker, its text followed by ``[image:
caption]`` when it shares a photo; all turns of a session carry the session's
time, read as UTC (an hour outside 1-12 is malformed). A malformed sample is
left out whole (its position is the sample's), and a session without a turn of
text is left out as empty.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

from memdir.ingest import _common as c
from memdir.ingest.model import Conversation, IngestError, LeftOut, Message
from memdir.timeutil import MONTHS

_SESSION_RE = re.compile(r"^session_(\d+)$")
_WHEN_RE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)


def parse_locomo(value: object) -> list[c.Parsed]:
    items = c.root_list(value, "a list of LoCoMo samples")
    found: list[c.Parsed] = []
    for index, item in enumerate(items):
        position = index + 1
        try:
            sessions = _sample(item, c.item_path("samples", index))
        except IngestError as err:
            title = c.raw_title(item, "sample_id")
            found.append(LeftOut(position, title, "malformed", err.reason, err.at))
            continue
        for title, session in sessions:
            if session is None:
                found.append(LeftOut(position, title, "empty", "no turn with text"))
            else:
                found.append(dataclasses.replace(session, position=position))
    return found


def session_time(value: object, at: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as aware UTC."""
    text = c.as_str(value, at)
    match = _WHEN_RE.match(text)
    month = _month(match.group(5)) if match else None
    if match is None or month is None:
        raise IngestError(f"not a LoCoMo date-time like '1:56 pm on 8 May, 2023': {text!r}", at=at)
    hour, minute, half, day, year = (match.group(i) for i in (1, 2, 3, 4, 6))
    if not 1 <= int(hour) <= 12:  # 25:10 pm read as 13:10 before
        raise IngestError(
            f"not a valid date-time: {text!r} (the hour of a 12-hour clock is 1-12)", at=at
        )
    hour_24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)
    except ValueError as err:
        raise IngestError(f"not a valid date-time: {text!r} ({err})", at=at) from None


def _month(name: str) -> int | None:
    lowered = name.lower()
    for number, month in enumerate(MONTHS, start=1):
        if lowered == month or (len(lowered) >= 3 and month.startswith(lowered)):
            return number
    return None


def _sample(value: object, at: str) -> list[tuple[str, Conversation | None]]:
    obj = c.as_object(value, at)
    sample_at = c.key_path(at, "sample_id")
    sample_id = c.as_str(c.required(obj, "sample_id", at), sample_at).strip()
    if not sample_id:
        raise IngestError("expected a non-empty string", at=sample_at)
    conv_at = c.key_path(at, "conversation")
    conv = c.as_object(c.required(obj, "conversation", at), conv_at)
    speaker_a = c.as_str(c.required(conv, "speaker_a", conv_at), c.key_path(conv_at, "speaker_a"))
    speaker_b = c.as_str(c.required(conv, "speaker_b", conv_at), c.key_path(conv_at, "speaker_b"))
    sessions = sorted(
        (int(match.group(1)), key) for key in conv if (match := _SESSION_RE.match(key))
    )
    if not sessions:
        raise IngestError("no session_N list of turns", at=conv_at)
    speakers = f"{speaker_a.strip()} and {speaker_b.strip()}"
    conversations: list[tuple[str, Conversation | None]] = []
    for number, key in sessions:
        turns = c.as_list(conv[key], c.key_path(conv_at, key))
        when_key = f"{key}_date_time"
        when = session_time(c.required(conv, when_key, conv_at), c.key_path(conv_at, when_key))
        messages: list[Message] = []
        for turn_index, turn in enumerate(turns):
            message = _turn(turn, c.item_path(c.key_path(conv_at, key), turn_index), when)
            if message is not None:
                messages.append(message)
        title = f"{sample_id} session {number}: {speakers}"
        conversation = c.conversation(title, messages, when, f"{sample_id}:{key}")
        conversations.append((title, conversation))
    return conversations


def _turn(value: object, at: str, when: datetime) -> Message | None:
    obj = c.as_object(value, at)
    speaker = c.as_str(c.required(obj, "speaker", at), c.key_path(at, "speaker")).strip()
    text = c.clean(c.as_str(c.required(obj, "text", at), c.key_path(at, "text")))
    caption = c.clean(c.opt_str(obj.get("blip_caption"), c.key_path(at, "blip_caption")) or "")
    if caption:
        text = f"{text} [image: {caption}]".strip()
    if not text:
        return None
    return Message(role="user", content=text, timestamp=when, name=speaker or None)
