"""What may see a case's media, decided before a run stores or sends anything.

A case holding images or audio is refused, naming the file, line and field of its media, when:

- one of its media is a remote URL and the run does not allow remote media (``--allow-remote-media``):
  a run never reaches the network by surprise;
- the generator that would fill its candidate does not pass media on (a prompt template, a
  pipeline of the user's), or its model under test cannot take them (the model's declared
  capabilities, else litellm's ``supports_vision`` / ``supports_audio_input``);
- a scorer that calls a model does not place media in its requests (``Scorer.media_inputs``), so
  its judge would be shown a text stand-in; or it does and its model cannot take them.

Scorers that call no model read the case's text and are not concerned. Each answer about a
model is asked once per run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import InputError
from .media import kind_of, parts_of

if TYPE_CHECKING:
    from .runner import PreparedGenerator, PreparedScorer
    from .runtime import Runtime

NOUN = {"image": "images", "audio": "audio"}


class MediaGate:
    def __init__(self, runtime: Runtime, prepared: list[PreparedScorer], generator: PreparedGenerator | None = None, *,
                 allow_remote: bool = False) -> None:
        self.runtime = runtime  # its model layer is made only when a case holds media
        self.allow_remote = allow_remote
        self.scorers = [(p.name, p.scorer, p.scorer.media_models(),
                         bool(p.scorer.media_models()) or p.scorer.executor == "async") for p in prepared]
        self.generator = generator
        self._takes: dict[tuple[str, str], bool] = {}

    def check(self, case: Any, origin: str) -> None:
        first: dict[str, str] = {}  # kind -> the field of its first part, where an error points
        for field, part in parts_of(case):
            info = part.get("media") or {}
            if not info:
                raise self._error(origin, field, "a media part that was not read from a data file (build cases "
                                                 "with case_from_record or load them from a file)")
            if info.get("remote") and not self.allow_remote:
                raise self._error(origin, field, f"a remote media URL ({info['url'][:60]}): not fetched unless the run "
                                                 "allows remote media (--allow-remote-media)")
            first.setdefault(kind_of(part), field)
        if not first:
            return
        if self.generator is not None and not case.has("candidate"):
            name, generator = self.generator.entry.name, self.generator.generator
            for kind, field in first.items():
                if kind not in generator.media_inputs():
                    raise self._error(origin, field, f"generator {name!r} cannot pass {NOUN[kind]} on to the system "
                                                     f"under test, and case {case.id!r} holds {_a(kind)}: refused "
                                                     "rather than answered from its text alone")
                for model in generator.media_models():
                    self._model_takes(model, kind, origin, field, f"the model under test {model!r}", case)
        for name, scorer, models, calls_models in self.scorers:
            if not calls_models:
                continue
            for kind, field in first.items():
                if kind not in scorer.media_inputs():
                    shown = ", ".join(repr(m) for m in models) or "its model"
                    raise self._error(origin, field, f"scorer {name!r} would show its model {shown} a text stand-in "
                                                     f"of case {case.id!r}: its prompt does not place the case's "
                                                     f"{NOUN[kind]}; refused before any call")
                for model in models:
                    self._model_takes(model, kind, origin, field, f"the model {model!r} of scorer {name!r}", case)

    def _model_takes(self, model: str, kind: str, origin: str, field: str, who: str, case: Any) -> None:
        known = self._takes.get((model, kind))
        if known is None:
            known = self._takes[model, kind] = self.runtime.models.takes_media(model, kind)
        if not known:
            key = "supports_vision" if kind == "image" else "supports_audio_input"
            raise self._error(origin, field, f"{who} cannot take {NOUN[kind]}, and case {case.id!r} holds "
                                             f"{_a(kind)} (not declared by its provider or litellm; if it can, say "
                                             f"{key}: true under the model in the suite's models:)")

    @staticmethod
    def _error(origin: str, field: str, message: str) -> InputError:
        path, _, line = origin.rpartition(":")
        if not line.isdigit():
            return InputError(message, path=origin, field=field)
        return InputError(message, path=path, line=int(line), field=field)


def _a(kind: str) -> str:
    return "an image" if kind == "image" else "audio"
