"""Reading an export from its zip against reading its conversations.json: the cost of the archive.

    .venv/bin/python bench/ingest_archive.py [--sizes 500,2000,8000] [--repeat 3]

For each size, a synthetic ChatGPT export of that many conversations (eight
messages each, a regenerated answer, a hidden system node, an image part, one
conversation in twenty without ``current_node``) is written once as
``conversations.json`` and once as the zip ChatGPT sends (with ``chat.html`` and
``user.json`` beside it, deflated). ``parse_file`` is timed on each, best of
``--repeat``, and the table prints seconds, MB and the zip's time as a ratio of
the JSON's (the baseline, measured in the same run). Then one import of each
size (``memory.ingest``, hashing embedder, fresh default folder) is timed from the
zip and from the JSON, as a second ratio: reading the archive should be a small
part of an import.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import memdir
from memdir.ingest import parse_file

T0 = 1_650_000_000.0


def _node(node_id: str, parent: str | None, role: str, text: Any, t: float | None) -> Any:
    parts = text if isinstance(text, list) else [text]
    kind = "multimodal_text" if len(parts) > 1 else "text"
    message = {
        "id": node_id,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": t,
        "content": {"content_type": kind, "parts": parts},
        "metadata": {"is_visually_hidden_from_conversation": role == "system"},
        "recipient": "all",
    }
    return {"id": node_id, "parent": parent, "children": [], "message": message}


def conversation(n: int) -> dict[str, Any]:
    t = T0 + n * 3600
    image = {"content_type": "image_asset_pointer", "asset_pointer": f"file-service://f{n}"}
    mapping = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
    mapping["sys"] = _node("sys", "root", "system", "", None)
    parent = "sys"
    for m in range(8):
        node_id = f"m{m}"
        role = ("user", "assistant")[m % 2]
        text: Any = f"Conversation {n} turn {m}: " + "words about the topic at hand " * 12
        if m == 0:
            text = [image, text]
        mapping[node_id] = _node(node_id, parent, role, text, t + m * 30)
        if m == 3:  # a regenerated answer beside m3
            mapping["m3old"] = _node("m3old", parent, role, "an older draft", t + m * 30 - 5)
        parent = node_id
    convo = {"title": f"Chat {n}", "create_time": t, "mapping": mapping, "id": f"c-{n}"}
    if n % 20:
        convo["current_node"] = parent
    return convo


def write_export(folder: Path, size: int) -> tuple[Path, Path]:
    data = json.dumps([conversation(n) for n in range(size)])
    plain = folder / f"conversations-{size}.json"
    plain.write_text(data, encoding="utf-8")
    archive = folder / f"chatgpt-export-{size}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("conversations.json", data)
        zipped.writestr("chat.html", "<html><body></body></html>")
        zipped.writestr("user.json", "{}")
    return plain, archive


def best(repeat: int, run: Any) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def import_seconds(work: Path, source: Path, tag: str) -> float:
    folder = work / f"folder-{tag}"
    memdir.init(folder)
    with memdir.open(folder, embedder="hashing") as memory:
        start = time.perf_counter()
        report = memory.ingest(source)
        seconds = time.perf_counter() - start
    assert report.imported == report.conversations, report
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000,8000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for size in sizes:
            plain, archive = write_export(work, size)
            assert parse_file(plain) == parse_file(archive)
            json_s = best(args.repeat, lambda p=plain: parse_file(p))
            zip_s = best(args.repeat, lambda a=archive: parse_file(a))
            rows.append((size, plain.stat().st_size, archive.stat().st_size, json_s, zip_s))
        print("| conversations | JSON MB | zip MB | parse JSON s | parse zip s | zip / JSON |")
        print("|---:|---:|---:|---:|---:|---:|")
        for size, json_b, zip_b, json_s, zip_s in rows:
            print(
                f"| {size} | {json_b / 1e6:.1f} | {zip_b / 1e6:.2f} | {json_s:.3f} | "
                f"{zip_s:.3f} | {zip_s / json_s:.2f}x |"
            )
        size = sizes[0]
        plain, archive = work / f"conversations-{size}.json", work / f"chatgpt-export-{size}.zip"
        from_json = import_seconds(work, plain, "json")
        from_zip = import_seconds(work, archive, "zip")
        print(
            f"\nimport of {size} conversations: from the JSON {from_json:.2f} s, from the zip "
            f"{from_zip:.2f} s ({from_zip / from_json:.2f}x)"
        )


if __name__ == "__main__":
    main()
