"""The real local model's answers, recorded once and replayed through the scripted model.

Tests of the judge, checklist and Trust-Score plugins that need a local model only to get
answers run twice: against ``local/qwen2.5-coder-1.5b`` itself (``local_model``: the full tier),
and against its answers recorded in ``tests/data/recorded/`` (the fast tier), with the same
assertions. The replay is the scripted model registered as ``replay/PATH`` with the local
provider's capabilities (schema, logprobs, no reasoning), so the prompts it receives are the ones
the local model received, and each is answered with the text and token logprobs recorded for it.

``make record-answers`` runs the local-model side with ``EVALYARD_RECORD_ANSWERS=1``: each such
test then writes what the model answered (its response cache) as scripted rules.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from evalyard import hookimpl
from evalyard.testing.scripted import ScriptedModel, prompt_text

RECORDED = Path(__file__).resolve().parent / "data" / "recorded"
QWEN = "local/qwen2.5-coder-1.5b"


class ReplayModel(ScriptedModel):
    """The scripted model, assumed to be what the local provider says its models are."""

    def capabilities(self, model: str) -> dict[str, Any]:
        return {"supports_schema": True, "supports_logprobs": True, "reasoning": False, "concurrency": 1}


REPLAY_MODEL = ReplayModel()


@hookimpl
def register_model_providers(register):
    register("replay", REPLAY_MODEL)


def recording(name: str) -> Path:
    return RECORDED / f"{name}.jsonl"


def rules_from_calls(db: Path) -> list[dict[str, Any]]:
    """Each answered call of a run's response cache as a scripted rule that matches its whole prompt."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT request, response, usage FROM model_calls ORDER BY created_at, key").fetchall()
    rules = []
    for request, response, usage in rows:
        request, response, usage = json.loads(request), json.loads(response), json.loads(usage or "{}")
        rule: dict[str, Any] = {"contains": prompt_text(request["messages"]), "content": response["text"],
                                "usage": {k: usage[k] for k in ("prompt_tokens", "completion_tokens") if k in usage}}
        if response.get("logprobs"):
            rule["logprobs"] = [entry.get("top") or {entry["token"]: entry["logprob"]}
                                for entry in response["logprobs"]]
        rules.append(rule)
    # The first matching rule answers: a prompt that holds another whole prompt must come first.
    return sorted(rules, key=lambda rule: -len(rule["contains"]))


def write_recording(name: str, db: Path) -> Path:
    rules = rules_from_calls(db)
    if not rules:
        raise AssertionError(f"nothing to record for {name}: the run made no model call")
    path = recording(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(rule, ensure_ascii=False, sort_keys=True) + "\n" for rule in rules),
                    encoding="utf-8")
    return path
