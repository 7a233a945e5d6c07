"""inspect_ai's eval logs as evalyard cases: the ``.eval`` archive (inspect's default log format)
and the ``.json`` log (``--log-format json``).

One case per sample and epoch, so a team can score inspect's outputs again with evalyard's scorers:

- ``id``: the sample's id; ``<id>/epoch-<n>`` when the eval ran several epochs.
- ``input``: the sample's input: its text, or for a chat input the messages as ``role: text``
  paragraphs (a lone user message is just its text).
- ``candidate``: the model's final output (``output.completion``); none when the sample failed
  without output (``--model``/``--generator`` can fill it).
- ``reference``: the target; for a list of targets the first one, all of them in
  ``metadata.targets``.
- ``messages``: the sample's message history in OpenAI's chat format (system, user, assistant
  turns with their tool calls, tool results), so the agent plugin's scorers can judge what the
  solver did; ``tools``: the tool definitions of the sample's first model call, when it had any.
- ``metadata``: the sample's own metadata, and ``inspect``: the sample id, epoch and uuid, inspect's
  own scores (value, answer, explanation per scorer), the sample's error, the task, model and
  eval and run ids.

``--field CASE_FIELD=KEY`` takes a case field from the sample's metadata instead.

``.eval`` files are read as this format by their ending; an inspect ``.json`` log needs
``--format inspect`` (``.json`` stays evalyard's own format). The archive is read one sample at a
time, never unpacked whole; inspect writes it with Zstandard compression, which Python reads
natively from 3.14 and through the ``zstandard`` package before that.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalyard import (Case, InputError, check_messages, check_tools, check_unique_ids, parse_case_json,
                      read_case_file)

from .records import array_item_lines, as_text, override_fields, record_id, source_field_map

#: The zip compression method number of Zstandard (PKWARE's APPNOTE, 4.4.5).
ZIP_ZSTANDARD = 93


@dataclass
class LogInfo:
    """What every sample of one log shares."""

    task: Any = None
    model: Any = None
    eval_id: Any = None
    run_id: Any = None
    epochs: int = 1
    order: dict[str, int] = field(default_factory=dict)  # sample id -> position in the dataset

    @classmethod
    def of(cls, spec: Any) -> "LogInfo":
        spec = spec if isinstance(spec, dict) else {}
        config = spec.get("config") if isinstance(spec.get("config"), dict) else {}
        epochs = config.get("epochs")
        dataset = spec.get("dataset") if isinstance(spec.get("dataset"), dict) else {}
        ids = dataset.get("sample_ids") if isinstance(dataset.get("sample_ids"), list) else []
        return cls(task=spec.get("task"), model=spec.get("model"), eval_id=spec.get("eval_id"),
                   run_id=spec.get("run_id"), epochs=epochs if isinstance(epochs, int) and epochs > 0 else 1,
                   order={str(i): n for n, i in enumerate(ids)})


def load_inspect_log(path: str | Path, field_map: dict[str, str] | None = None) -> tuple[list[Case], list[str]]:
    path = str(path)
    field_map = source_field_map(field_map, path, "the sample's metadata keys")
    if path.lower().endswith(".eval"):
        return _load_archive(path, field_map)
    return _load_json_log(path, field_map)


def _load_json_log(path: str, field_map: dict[str, str]) -> tuple[list[Case], list[str]]:
    text = read_case_file(path)
    data = parse_case_json(text, path, None)
    if not isinstance(data, dict) or not isinstance(data.get("eval"), dict):
        raise InputError("expected an inspect_ai eval log: an object with 'eval' and 'samples', as "
                         "`inspect eval --log-format json` writes it", path=path, line=1, field="eval")
    samples = data.get("samples")
    if not isinstance(samples, list) or not samples:
        raise InputError("the log has no samples to score (was it written with --no-log-samples?)", path=path,
                         line=1, field="samples")
    lines = array_item_lines(text, ("samples",))
    if lines is None or len(lines) != len(samples):
        lines = [1] * len(samples)
    log = LogInfo.of(data["eval"])
    entries = [(_case(sample, log, path=path, line=line, field_map=field_map), f"{path}:{line}")
               for sample, line in zip(samples, lines)]
    cases, origins = _in_dataset_order(entries, log)
    check_unique_ids(cases, origins)
    return cases, origins


def _load_archive(path: str, field_map: dict[str, str]) -> tuple[list[Case], list[str]]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"not an inspect_ai .eval log (not a zip archive: {exc})", path=path) from None
    with archive:
        names = archive.namelist()
        header = next((n for n in ("header.json", "_journal/start.json") if n in names), None)
        if header is None:
            raise InputError("not an inspect_ai .eval log (no header.json inside)", path=path)
        spec = _member_json(archive, header, path)
        log = LogInfo.of(spec.get("eval") if isinstance(spec, dict) else None)
        members = sorted(n for n in names if n.startswith("samples/") and n.endswith(".json"))
        if not members:
            raise InputError("the log has no samples to score (was it written with --no-log-samples?)", path=path)
        # A sample inside an archive has no line: its origin is the archive member it came from.
        entries = [(_case(_member_json(archive, name, path), log, path=f"{path}:{name}", line=None,
                          field_map=field_map), f"{path}:{name}") for name in members]
    cases, origins = _in_dataset_order(entries, log)
    seen: dict[str, str] = {}
    for case, origin in zip(cases, origins):
        if case.id in seen:
            raise InputError(f"duplicate case id {case.id!r} (first in {seen[case.id]})", path=origin, field="id")
        seen[case.id] = origin
    return cases, origins


def _in_dataset_order(entries: list[tuple[Case, str]], log: LogInfo) -> tuple[list[Case], list[str]]:
    """Samples in the dataset's order, epoch by epoch within a sample (inspect writes them in the
    order they finished)."""
    def key(entry):
        inspect = entry[0].metadata["inspect"]
        return log.order.get(str(inspect["sample_id"]), len(log.order)), inspect["epoch"]

    entries = sorted(entries, key=key)
    return [case for case, _ in entries], [origin for _, origin in entries]


def _member_json(archive: zipfile.ZipFile, name: str, path: str) -> Any:
    where = f"{path}:{name}"
    data = _read_member(archive, name, where)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 JSON", path=where) from None
    return parse_case_json(text, where, None)


def _read_member(archive: zipfile.ZipFile, name: str, where: str) -> bytes:
    info = archive.getinfo(name)
    try:
        return archive.read(info)
    except NotImplementedError:  # Zstandard before Python 3.14
        if info.compress_type != ZIP_ZSTANDARD:
            raise InputError(f"compressed with zip method {info.compress_type}, which cannot be read here",
                             path=where) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise InputError(f"damaged archive member: {exc}", path=where) from None
    return _read_zstandard_member(archive, info, where)


def _read_zstandard_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """One Zstandard-compressed member, read from the archive's bytes directly: patching
    ``zipfile`` to know the method (as inspect does) would change it for the whole process."""
    try:
        import zstandard
    except ImportError:
        raise InputError("this .eval log is compressed with Zstandard: install the zstandard package (a "
                         "dependency of evalyard-interop) or use Python 3.14 or later", path=where) from None
    handle = archive.fp
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise InputError("damaged archive member (no local header)", path=where)
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    handle.seek(info.header_offset + 30 + name_length + extra_length)
    compressed = handle.read(info.compress_size)
    try:
        # inspect starts a new frame every 200 MiB of input: read across frames.
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed), read_across_frames=True) as reader:
            data = reader.read()
    except zstandard.ZstdError as exc:
        raise InputError(f"damaged archive member: {exc}", path=where) from None
    if zlib.crc32(data) != info.CRC or len(data) != info.file_size:
        raise InputError("damaged archive member (its checksum does not match)", path=where)
    return data


def _case(sample: Any, log: LogInfo, *, path: str, line: int | None, field_map: dict[str, str]) -> Case:
    if not isinstance(sample, dict):
        raise InputError(f"expected a sample object, got {type(sample).__name__}", path=path, line=line)
    sample_id = record_id(sample.get("id"), path=path, line=line, field="id")
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
        raise InputError(f"expected the epoch as a number from 1, got {epoch!r:.40}", path=path, line=line,
                         field="epoch")
    own = sample.get("metadata")
    if own is not None and not isinstance(own, dict):
        raise InputError(f"expected an object, got {type(own).__name__}", path=path, line=line, field="metadata")
    own = dict(own or {})

    target = sample.get("target")
    targets = None
    if isinstance(target, list):
        if not all(isinstance(t, str) for t in target):
            raise InputError("expected the target as text or a list of texts", path=path, line=line, field="target")
        targets, target = list(target), (target[0] if target else None)
    elif target is not None and not isinstance(target, str):
        raise InputError("expected the target as text or a list of texts", path=path, line=line, field="target")

    output = sample.get("output")
    if output is not None and not isinstance(output, dict):
        raise InputError(f"expected an object, got {type(output).__name__}", path=path, line=line, field="output")
    candidate = _completion(output or {}, path=path, line=line)
    error = sample.get("error")
    if error and not candidate:
        candidate = None  # a sample that failed before answering: nothing to score

    fields = {
        "id": sample_id if log.epochs == 1 else f"{sample_id}/epoch-{epoch}",
        "input": _input_text(sample.get("input"), path=path, line=line),
        "candidate": candidate,
        "reference": target or None,
    }
    context = override_fields(fields, own, field_map, path=path, line=line, prefix="metadata")

    details = {
        "sample_id": sample.get("id"),
        "epoch": epoch,
        "uuid": sample.get("uuid"),
        "scores": _scores(sample.get("scores")),
        "error": error.get("message") if isinstance(error, dict) else as_text(error),
        "task": log.task,
        "model": log.model,
        "eval_id": log.eval_id,
        "run_id": log.run_id,
    }
    metadata = dict(own)
    if targets is not None:
        metadata["targets"] = targets
    metadata["inspect"] = {k: v for k, v in details.items() if v is not None}
    return Case(id=fields["id"], input=fields["input"], candidate=fields["candidate"], reference=fields["reference"],
                context=context, metadata=metadata, **_dialogue(sample, path=path, line=line))


def _dialogue(sample: dict[str, Any], *, path: str, line: int | None) -> dict[str, Any]:
    """The sample's message history (and the tools its model was offered) as a case's dialogue
    fields, checked as any case's are; long texts inspect stored as attachments are put back."""
    history = sample.get("messages")
    if not history:
        return {}
    attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
    if not isinstance(history, list):
        raise InputError(f"expected a list of chat messages, got {type(history).__name__}", path=path, line=line,
                         field="messages")
    fields = {"messages": check_messages([_message(m, attachments) for m in history], path, line or 0)}
    for event in sample.get("events") or ():
        if isinstance(event, dict) and event.get("event") == "model":
            if event.get("tools"):
                fields["tools"] = check_tools([{"type": "function", "function": _attached(t, attachments)}
                                               for t in event["tools"]], path, line or 0)
            break
    return fields


def _attached(value: Any, attachments: dict[str, Any]) -> Any:
    """``value`` with inspect's ``attachment://HASH`` references replaced by the texts they name."""
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value.removeprefix("attachment://"), value)
    if isinstance(value, list):
        return [_attached(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _attached(v, attachments) for k, v in value.items()}
    return value


def _message(message: Any, attachments: dict[str, Any]) -> Any:
    """One of inspect's chat messages in OpenAI's shape (left as it is when it is not an object: the
    check then names it)."""
    if not isinstance(message, dict):
        return message
    message = _attached(message, attachments)
    out: dict[str, Any] = {"role": message.get("role"), "content": _content_text(message.get("content"))}
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [{"id": call.get("id"), "type": "function", "function": {
            "name": call.get("function"), "arguments": json.dumps(call.get("arguments") or {}, ensure_ascii=False)}}
            if isinstance(call, dict) else call for call in calls]
    elif calls is not None:
        out["tool_calls"] = calls
    if message.get("role") == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
    return out


def _scores(scores: Any) -> dict[str, Any]:
    """inspect's own verdicts (value, answer, explanation per scorer), without their edit history."""
    if not isinstance(scores, dict):
        return {}
    return {name: {k: v for k, v in score.items() if k in ("value", "answer", "explanation") and v is not None}
            for name, score in scores.items() if isinstance(score, dict)}


def _completion(output: dict[str, Any], *, path: str, line: int | None) -> str | None:
    completion = output.get("completion")
    if isinstance(completion, str):
        return completion
    if completion is not None:
        raise InputError("expected the model's completion as text", path=path, line=line, field="output.completion")
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return _content_text(message.get("content"))
    return None


def _content_text(content: Any) -> str:
    """A message's text: its text parts in order; other parts (images, audio...) named, not dropped
    silently; reasoning left out (it is not the answer)."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif kind != "reasoning":
            parts.append(f"[{kind}]")
    return "\n".join(parts)


def _input_text(value: Any, *, path: str, line: int | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        raise InputError("expected the input as text or a list of chat messages", path=path, line=line, field="input")
    if len(value) == 1 and value[0].get("role") == "user":
        return _content_text(value[0].get("content"))
    return "\n\n".join(f"{m.get('role', 'user')}: {_content_text(m.get('content'))}" for m in value)
