"""A team's documents as chunks with stable ids: read text, Markdown, HTML and PDF files, cut them
into passages of about ``size`` words at paragraph (and heading) boundaries.

A chunk's id is ``<path relative to the folder given>#<n>`` (n from 1 in the file), so the ids
a test set names are the ones a retriever indexing the chunk file returns, and a rerun over the
same files gives the same ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

from evalyard import InputError

TEXT_SUFFIXES = (".txt", ".text", ".md", ".markdown", ".rst")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    source: str

    @property
    def words(self) -> int:
        return len(self.text.split())

    def to_dict(self) -> dict[str, object]:
        """As a retrieved passage is written (``id``, ``text``, ``metadata``), so a retriever over
        the chunk file can return its records as they are."""
        return {"id": self.id, "text": self.text, "metadata": {"source": self.source}}


def document_files(paths: list[str]) -> list[tuple[Path, str]]:
    """Each file to read with the name its chunk ids carry: a folder's supported files (recursively,
    sorted, hidden ones skipped) named relative to it; a file given by name, by its own name.
    A file given by name in a format not read is an error; in a folder it is skipped."""
    found: list[tuple[Path, str]] = []
    for given in paths:
        root = Path(given)
        if root.is_dir():
            for path in sorted(root.rglob("*")):
                relative = path.relative_to(root)
                if path.is_file() and path.suffix.lower() in SUFFIXES and \
                        not any(part.startswith(".") or part.startswith("_") for part in relative.parts):
                    found.append((path, relative.as_posix()))
        elif root.is_file():
            if root.suffix.lower() not in SUFFIXES:
                raise InputError(f"cannot read {root.suffix or 'a file without a suffix'} documents "
                                 f"(read: {', '.join(SUFFIXES)})", path=given)
            found.append((root, root.name))
        else:
            raise InputError("no such file or folder", path=given)
    names = [name for _, name in found]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:  # two folders with the same relative file: their chunk ids would collide
        raise InputError(f"two documents are named {duplicate!r}: give one folder, or files with distinct names",
                         path=str(next(p for p, n in found if n == duplicate)))
    return found


def read_document(path: Path) -> str:
    """The text of one document; InputError naming the file when it cannot be read."""
    suffix = path.suffix.lower()
    if suffix in PDF_SUFFIXES:
        return _pdf_text(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=str(path)) from None
    if suffix in HTML_SUFFIXES:
        return html_text(raw)
    return raw


def _pdf_text(path: Path) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:  # pragma: no cover - a dependency of the plugin
        raise InputError("reading PDF needs pypdf (pip install pypdf)", path=str(path)) from None
    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise InputError(f"not a readable PDF ({type(exc).__name__}: {str(exc)[:80]})", path=str(path)) from None
    return "\n\n".join(pages)


class _TextOfHTML(HTMLParser):
    """Visible text, block elements as paragraph breaks; scripts, styles and templates left out."""

    BLOCKS = {"p", "div", "section", "article", "li", "ul", "ol", "table", "tr", "br", "pre", "blockquote",
              "h1", "h2", "h3", "h4", "h5", "h6", "header", "footer", "main", "dd", "dt"}
    HIDDEN = {"script", "style", "template", "noscript", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def html_text(raw: str) -> str:
    parser = _TextOfHTML()
    parser.feed(raw)
    parser.close()
    return "".join(parser.parts)


_HEADING = re.compile(r"^(#{1,6}\s|={3,}\s*$|-{3,}\s*$)")
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_DIRECTIVE = re.compile(r"^(```|:::|\.\. |\{)")


def paragraphs(text: str) -> Iterator[tuple[str, bool]]:
    """(paragraph, starts a section) for each blank-line-separated paragraph, whitespace folded;
    front matter and fence/directive lines are left out (they are markup, not prose)."""
    text = _FRONT_MATTER.sub("", text.replace("\r\n", "\n"))
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.strip().splitlines() if not _DIRECTIVE.match(line.strip())]
        if not lines:
            continue
        folded = " ".join(" ".join(lines).split())
        if folded:
            yield folded, bool(_HEADING.match(lines[0]))


def chunk_text(text: str, name: str, size: int = 200) -> list[Chunk]:
    """Paragraphs packed into chunks of at most ``size`` words (a longer paragraph is cut at
    sentence ends, else at ``size`` words); a heading starts a new chunk."""
    pieces: list[str] = []
    for paragraph, heading in paragraphs(text):
        if heading:
            pieces.append("")  # a boundary
        pieces.extend(_split_long(paragraph, size))
    chunks: list[Chunk] = []
    current: list[str] = []

    def close() -> None:
        if current:
            chunks.append(Chunk(id=f"{name}#{len(chunks) + 1}", text="\n\n".join(current), source=name))
            current.clear()

    for piece in pieces:
        if not piece or sum(len(p.split()) for p in current) + len(piece.split()) > size:
            close()
        if piece:
            current.append(piece)
    close()
    return chunks


def _split_long(paragraph: str, size: int) -> list[str]:
    words = paragraph.split()
    if len(words) <= size:
        return [paragraph]
    out, current = [], []
    for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
        sentence_words = sentence.split()
        while len(sentence_words) > size:  # a run-on "sentence": cut at size words
            if current:
                out.append(" ".join(current))
                current = []
            out.append(" ".join(sentence_words[:size]))
            sentence_words = sentence_words[size:]
        if len(current) + len(sentence_words) > size:
            out.append(" ".join(current))
            current = []
        current.extend(sentence_words)
    if current:
        out.append(" ".join(current))
    return out


def load_chunks(paths: list[str], size: int = 200) -> list[Chunk]:
    """Every chunk of the documents at ``paths``; InputError when none has any text."""
    if size < 20:
        raise InputError(f"--chunk-size {size}: a chunk needs at least 20 words to ask a question about")
    files = document_files(paths)
    if not files:
        raise InputError(f"no documents to read (read: {', '.join(SUFFIXES)})", path=paths[0] if paths else None)
    chunks = [chunk for path, name in files for chunk in chunk_text(read_document(path), name, size)]
    if not chunks:
        raise InputError("the documents hold no text", path=paths[0])
    return chunks
