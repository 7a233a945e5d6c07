"""Images and audio in cases: read at the door, checked by their bytes, named by their hash.

A media part is an OpenAI content part, in a case's ``input`` (a list of parts) or in a message's
``content``:

- ``{"type": "image_url", "image_url": {"url": URL, "detail": "low|high|auto"}}``: PNG, JPEG,
  WebP or GIF; ``URL`` is a path relative to the data file, a ``data:`` URI, or a remote
  ``http(s)://`` URL (passed on only when the run allows remote media);
- ``{"type": "input_audio", "input_audio": {"data": DATA, "format": "wav|mp3|flac"}}``: ``DATA``
  is base64 (OpenAI's form), a ``data:`` URI, or a path ending in ``.wav``/``.mp3``/``.flac``.

Each one is read once when its case is read: the real type sniffed from the bytes (magic
numbers), the declared type (a data URI's, a file's extension, the audio ``format``) held
against it, an image decoded whole (a corrupt one is refused) and held to the size caps. The
part the case keeps names its bytes by sha256 (``media``: ``sha256``, ``type``, ``size``,
``path``, an image's ``width``/``height``), so a case costs a few dozen bytes however large its
media, the suite's version covers the bytes, and the request a model gets is keyed by the hash
(``request_content``) while the bytes themselves are put in only as it is sent (``inline``).
The bytes ride along on the case (``Case.media``, never stored with it) until the store keeps
them once in its ``media`` table.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from .errors import InputError

IMAGE_TYPES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP", "image/gif": "GIF"}
AUDIO_TYPES = {"audio/wav": "WAV", "audio/mpeg": "MP3", "audio/flac": "FLAC"}
#: a file's extension -> the type it declares
EXTENSIONS = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
              ".gif": "image/gif", ".wav": "audio/wav", ".mp3": "audio/mpeg", ".flac": "audio/flac"}
#: an ``input_audio`` part's ``format`` -> its type
AUDIO_FORMATS = {"wav": "audio/wav", "mp3": "audio/mpeg", "flac": "audio/flac"}
#: a data URI's type as people write it -> the canonical one
ALIASES = {"image/jpg": "image/jpeg", "audio/x-wav": "audio/wav", "audio/wave": "audio/wav",
           "audio/vnd.wave": "audio/wav", "audio/mp3": "audio/mpeg", "audio/x-flac": "audio/flac"}

#: The caps: OpenAI takes images up to 20 MB and audio up to 25 MB; the pixel cap keeps a small
#: file that decodes to a huge bitmap (a decompression bomb) from being decoded at all.
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 40_000_000
MAX_AUDIO_BYTES = 25 * 1024 * 1024

#: how a request names media before the bytes are put in (``inline``): the hash, so cache keys
#: and stored requests stay small and do not depend on where the file was
REF = "media:sha256:"
MEDIA_KINDS = {"image_url": "image", "input_audio": "audio"}

_DATA_URI = re.compile(r"data:(?P<type>[\w.+-]+/[\w.+-]+)?(?P<params>(;[\w.+-]+=[^;,]*)*)(?P<b64>;base64)?,",
                       re.ASCII)


@dataclass(frozen=True, slots=True)
class Media:
    """One image or audio clip's bytes, checked, with what the case keeps of it."""

    sha256: str
    type: str
    data: bytes
    width: int | None = None
    height: int | None = None


class MediaError(ValueError):
    """Why a media part cannot be read; the caller names the file, line and field."""


# -- reading bytes -------------------------------------------------------------------------------

def sniff(data: bytes) -> str | None:
    """The type the bytes are, by their magic numbers; None for none of the supported ones."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data.startswith(b"fLaC"):
        return "audio/flac"
    if data.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "audio/mpeg"  # an ID3 tag, or an MPEG audio frame's sync bits
    return None


def _name(media_type: str | None) -> str:
    """"a PNG image", "WAV audio": what a message calls a type."""
    if media_type is None:
        return "none of PNG, JPEG, WebP, GIF, WAV, MP3 or FLAC"
    if media_type in IMAGE_TYPES:
        return f"a {IMAGE_TYPES[media_type]} image"
    return f"{AUDIO_TYPES.get(media_type, media_type)} audio"


def decode_data_uri(uri: str) -> tuple[str | None, bytes]:
    """(the declared type, the bytes) of a ``data:`` URI; MediaError when it does not decode."""
    match = _DATA_URI.match(uri)
    if match is None:
        raise MediaError("a data URI that does not parse (expected data:TYPE;base64,DATA)")
    payload = uri[match.end():]
    declared = match.group("type")
    declared = ALIASES.get(declared.lower(), declared.lower()) if declared else None
    if not match.group("b64"):
        raise MediaError("a data URI without ;base64: media are given as base64")
    return declared, _b64(payload, "the data URI's base64")


def _b64(text: str, what: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MediaError(f"{what} does not decode: {exc}") from None
    if not data:
        raise MediaError(f"{what} is empty")
    return data


def read_file(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > max(MAX_IMAGE_BYTES, MAX_AUDIO_BYTES):  # not read at all: too large for either
            raise MediaError(f"a file of {size / 2**20:.1f} MB, over the caps ({MAX_IMAGE_BYTES // 2**20} MB for an "
                             f"image, {MAX_AUDIO_BYTES // 2**20} MB for audio)")
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise MediaError(f"cannot read media file {str(path)!r}: {exc.strerror or exc}") from None


# -- checking bytes ------------------------------------------------------------------------------

def check(data: bytes, declared: str | None, kind: str, how: str) -> Media:
    """The bytes as Media, or MediaError: the sniffed type must be of ``kind`` (image, audio)
    and equal the ``declared`` one (``how`` says who declared it); an image must decode whole
    and fit the caps; audio must have a sound header."""
    found = sniff(data)
    wanted = IMAGE_TYPES if kind == "image" else AUDIO_TYPES
    if declared is not None and declared not in IMAGE_TYPES and declared not in AUDIO_TYPES:
        raise MediaError(f"unsupported media type {declared} ({how}); supported: PNG, JPEG, WebP, GIF images "
                         "and WAV, MP3, FLAC audio")
    if declared is not None and found is not None and declared != found:
        raise MediaError(f"declared as {_name(declared)} ({how}) but the bytes are {_name(found)}")
    if found not in wanted:
        expected = "an image (PNG, JPEG, WebP or GIF)" if kind == "image" else "audio (WAV, MP3 or FLAC)"
        raise MediaError(f"expected {expected}, but the bytes are {_name(found) if found else 'none of them'}")
    if kind == "image":
        if len(data) > MAX_IMAGE_BYTES:
            raise MediaError(f"an image of {len(data) / 2**20:.1f} MB, over the cap of {MAX_IMAGE_BYTES // 2**20} MB")
        width, height = _check_image(data, found)
        return Media(hashlib.sha256(data).hexdigest(), found, data, width, height)
    if len(data) > MAX_AUDIO_BYTES:
        raise MediaError(f"audio over the cap of {MAX_AUDIO_BYTES // 2**20} MB")
    _check_audio(data, found)
    return Media(hashlib.sha256(data).hexdigest(), found, data)


def _check_image(data: bytes, media_type: str) -> tuple[int, int]:
    """Decode the whole image (Pillow), so a truncated or corrupt file is refused here rather than
    by the provider mid-run; the pixel cap is checked from the header before decoding."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                raise MediaError(f"an image of {width}x{height} pixels, over the cap of {MAX_IMAGE_PIXELS:,} pixels")
            image.load()
    except MediaError:
        raise
    except Image.DecompressionBombError:  # Pillow's own cap, met before its header reaches ours
        raise MediaError(f"an image of more pixels than the cap of {MAX_IMAGE_PIXELS:,}") from None
    except Image.UnidentifiedImageError:
        raise MediaError(f"a corrupt {IMAGE_TYPES[media_type]} image: its header cannot be read (truncated or "
                         "damaged)") from None
    except Exception as exc:  # Pillow raises many kinds for a bad file (OSError, SyntaxError, ValueError...)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MediaError(f"a corrupt {IMAGE_TYPES[media_type]} image: {reason}") from None
    return width, height


def _check_audio(data: bytes, media_type: str) -> None:
    """A sound header that reads: WAV's format chunk (the standard library's ``wave``, which also
    takes the float WAV files recorders write), FLAC's stream info, an MP3 frame or ID3 tag."""
    if media_type == "audio/wav":
        import wave

        try:
            with wave.open(io.BytesIO(data)) as clip:
                if clip.getnframes() == 0 or clip.getframerate() == 0:
                    raise MediaError("a WAV file without sound (no frames)")
        except MediaError:
            raise
        except Exception as exc:
            raise MediaError(f"a corrupt WAV file: {exc}") from None
    elif media_type == "audio/flac":
        if len(data) < 42 or data[4] & 0x7F != 0 or int.from_bytes(data[5:8], "big") != 34:
            raise MediaError("a corrupt FLAC file: no stream info block after 'fLaC'")
    elif len(data) < 128:
        raise MediaError("a corrupt MP3 file: too short to hold a frame")


# -- parts -----------------------------------------------------------------------------------------

def is_remote(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def _image_source(value: Any, base: Path) -> tuple[bytes, str | None, str, str | None]:
    """(bytes, declared type, who declared it, the path as written) of an image part's url."""
    if not isinstance(value, str) or not value:
        raise MediaError("expected the image's url (a path, a data: URI or an http(s) URL)")
    if value.startswith("data:"):
        declared, data = decode_data_uri(value)
        return data, declared, "by the data URI", None
    if value.startswith(REF):
        raise MediaError(f"{value[:30]}... names bytes kept in a database, not a file: give the file's path or a "
                         "data: URI")
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", value):
        raise MediaError(f"unsupported URL scheme in {value[:40]!r} (a path, a data: URI or an http(s) URL)")
    return _file(value, base)


def _file(value: str, base: Path) -> tuple[bytes, str | None, str, str]:
    extension = Path(value).suffix.lower()
    declared = EXTENSIONS.get(extension)
    if extension and declared is None:
        raise MediaError(f"unsupported media file type {extension!r} ({value}); supported: "
                         f"{', '.join(sorted(EXTENSIONS))}")
    path = base / value
    if not path.is_file():
        raise MediaError(f"media file not found: {value} (paths are relative to the data file)")
    return read_file(path), declared, f"by its extension {extension}" if extension else "", value


def read_part(part: dict[str, Any], base: Path) -> tuple[dict[str, Any], Media | None]:
    """A media part as the case keeps it and its Media (None for a remote URL); a MediaError's
    ``field`` is the path below the part it is about. The kept part names its bytes by hash."""
    kind = part.get("type")
    if kind == "image_url":
        body = part.get("image_url")
        if isinstance(body, str):  # the short form some clients write
            body = {"url": body}
        if not isinstance(body, dict):
            raise _at(MediaError("expected an object with the image's url"), "image_url")
        detail = body.get("detail")
        if detail is not None and detail not in ("low", "high", "auto"):
            raise _at(MediaError(f"unknown detail {detail!r} (low, high or auto)"), "image_url.detail")
        url = body.get("url")
        if isinstance(url, str) and is_remote(url):
            return {"type": kind, "image_url": dict(body), "media": {"url": url, "remote": True}}, None
        try:
            data, declared, how, path = _image_source(url, base)
            media = check(data, declared, "image", how or "by nothing")
        except MediaError as exc:
            raise _at(exc, "image_url.url") from None
        kept = {"url": path if path is not None else REF + media.sha256, **({"detail": detail} if detail else {})}
        return {"type": kind, "image_url": kept, "media": _info(media, path)}, media
    body = part.get("input_audio")
    if not isinstance(body, dict):
        raise _at(MediaError("expected an object with the audio's data and format"), "input_audio")
    fmt = body.get("format")
    if fmt not in AUDIO_FORMATS:
        raise _at(MediaError(f"unknown audio format {fmt!r} (wav, mp3 or flac)"), "input_audio.format")
    value = body.get("data")
    try:
        if not isinstance(value, str) or not value:
            raise MediaError("expected the audio (base64, a data: URI or a path to a .wav, .mp3 or .flac file)")
        path, how = None, f"by format {fmt!r}"
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", value):
            raise MediaError("audio is given as base64, a data: URI or a file's path; a URL is not fetched")
        if value.startswith("data:"):
            declared, data = decode_data_uri(value)
            if declared is not None and declared != AUDIO_FORMATS[fmt]:
                raise MediaError(f"the data URI says {declared} but the format says {fmt!r}")
        elif Path(value).suffix.lower() in EXTENSIONS:
            data, declared, _, path = _file(value, base)
            if declared != AUDIO_FORMATS[fmt]:
                raise MediaError(f"the file {value} is named as {_name(declared)} but the format says {fmt!r}")
        else:
            data = _b64(value, "the audio's base64")
        media = check(data, AUDIO_FORMATS[fmt], "audio", how)
    except MediaError as exc:
        raise _at(exc, "input_audio.data") from None
    kept = {"data": path if path is not None else REF + media.sha256, "format": fmt}
    return {"type": "input_audio", "input_audio": kept, "media": _info(media, path)}, media


def _info(media: Media, path: str | None) -> dict[str, Any]:
    info: dict[str, Any] = {"sha256": media.sha256, "type": media.type, "size": len(media.data), "path": path}
    if media.width is not None:
        info.update(width=media.width, height=media.height)
    return info


def _at(exc: MediaError, field: str) -> MediaError:
    exc.field = field  # type: ignore[attr-defined]
    return exc


def resolve(parts: list[Any], *, path: str, line: int, field: str, found: dict[str, Media],
            line_of: Callable[[], int] | None = None) -> list[dict[str, Any]]:
    """``parts`` with each media part read (``read_part``), its Media added to ``found`` by hash;
    a MediaError as an InputError naming the file, line and field."""
    base = Path(path).parent
    out = []
    for k, part in enumerate(parts):
        if isinstance(part, dict) and part.get("type") in MEDIA_KINDS:
            try:
                kept, media = read_part(part, base)
            except MediaError as exc:
                below = getattr(exc, "field", "")
                raise InputError(str(exc), path=path, line=(line_of() if line_of else 0) or line,
                                 field=f"{field}[{k}]" + (f".{below}" if below else "")) from None
            if media is not None:
                found[media.sha256] = media
            out.append(kept)
        else:
            out.append(part)
    return out


# -- a case's media --------------------------------------------------------------------------------

def parts_of(case: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, part) of every media part of a case: its input's, then its messages'."""
    for k, part in enumerate(case.input_parts or ()):
        if part.get("type") in MEDIA_KINDS:
            yield f"input[{k}]", part
    for n, message in enumerate(case.messages or ()):
        content = message.get("content")
        if isinstance(content, list):
            for k, part in enumerate(content):
                if isinstance(part, dict) and part.get("type") in MEDIA_KINDS:
                    yield f"messages[{n}].content[{k}]", part


def kind_of(part: dict[str, Any]) -> str:
    return MEDIA_KINDS[part["type"]]


def request_content(content: Any) -> Any:
    """A message's content as a request holds it: each local media part named by its hash (never
    by its path or bytes), a remote image by its URL, the keys a provider does not know dropped."""
    if not isinstance(content, list):
        return content
    out = []
    for part in content:
        info = part.get("media") if isinstance(part, dict) else None
        if info is None:
            out.append(part)
        elif part["type"] == "image_url":
            body = {k: v for k, v in part["image_url"].items() if k == "detail"}
            url = info["url"] if info.get("remote") else REF + info["sha256"]
            out.append({"type": "image_url", "image_url": {"url": url, **body}})
        else:
            out.append({"type": "input_audio",
                        "input_audio": {"data": REF + info["sha256"], "format": part["input_audio"]["format"]}})
    return out


def request_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "content": request_content(m.get("content"))} if isinstance(m.get("content"), list) else m
            for m in messages]


def references(messages: list[dict[str, Any]]) -> Iterator[str]:
    """The hashes a request's messages name."""
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                value = (part.get("image_url") or {}).get("url") if part.get("type") == "image_url" else \
                    (part.get("input_audio") or {}).get("data") if part.get("type") == "input_audio" else None
                if isinstance(value, str) and value.startswith(REF):
                    yield value[len(REF):]


def inline(messages: list[dict[str, Any]], read: Callable[[str], tuple[str, bytes]]) -> list[dict[str, Any]]:
    """The messages as sent: each hash reference replaced by its bytes (``read(sha256)`` ->
    (type, bytes)): an image as a base64 data URI, audio as base64 with its format. Messages
    without references are returned as they are."""
    if next(references(messages), None) is None:
        return messages
    out = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            out.append(message)
            continue
        parts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "image_url" and str(part["image_url"].get("url", "")).startswith(REF):
                media_type, data = read(part["image_url"]["url"][len(REF):])
                url = f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
                part = {"type": kind, "image_url": {**part["image_url"], "url": url}}
            elif kind == "input_audio" and str(part["input_audio"].get("data", "")).startswith(REF):
                _, data = read(part["input_audio"]["data"][len(REF):])
                part = {"type": kind, "input_audio": {**part["input_audio"],
                                                      "data": base64.b64encode(data).decode("ascii")}}
            parts.append(part)
        out.append({**message, "content": parts})
    return out
