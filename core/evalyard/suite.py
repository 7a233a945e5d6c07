"""Suite: a named, versioned set of cases plus the scorers to run on them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .scoring import Case


#: The threshold that asks for the one fitted by the judge's saved calibration.
CALIBRATED = "calibrated"


@dataclass
class ScorerSpec:
    """A scorer chosen for a run: its registry name, config values and pass threshold."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    #: a number, or ``"calibrated"``: the threshold of the judge's saved calibration (``evalyard calibrate --save``)
    threshold: float | str | None = None
    #: where the spec came from, for error messages ("suite.yaml:12" or "--scorer")
    origin: str = ""


@dataclass
class Suite:
    name: str
    cases: list[Case]
    description: str = ""
    scorers: list[ScorerSpec] = field(default_factory=list)
    source: str = ""
    #: provider settings per model string (``api_base``, ``api_key_env``, extra parameters)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the suite's own prompt-template directories (absolute), after the user's
    prompt_dirs: list[str] = field(default_factory=list)
    #: where the suite's non-async scorers run unless the run says otherwise (``--executor``)
    executor: str | None = None

    @property
    def version(self) -> str:
        """Content hash of the cases without their candidates: the same inputs, references,
        contexts and metadata always give the same version, whichever outputs are scored."""
        import hashlib  # here, not at the top: loading OpenSSL would slow every command's start-up

        digest = hashlib.sha256()
        for case in self.cases:
            content = case.to_dict()
            del content["candidate"]  # candidates belong to a run, not to the suite
            digest.update(json.dumps(content, sort_keys=True, ensure_ascii=False).encode())
            digest.update(b"\n")
        return digest.hexdigest()[:16]
