"""Shared helpers of the checklist tests: the reference data of AutoChecklist 0.2.3 and how to replay it."""

from __future__ import annotations

import json

from testutil import REFERENCE_DATA

REFERENCE = REFERENCE_DATA / "checklist"


def reference_records() -> list[dict]:
    return [json.loads(line) for line in (REFERENCE / "scores.jsonl").read_text().splitlines() if line.strip()]


def reference_checklist(checklist_id: str) -> dict:
    """A checklist of checklists.json by its id; ``cl5_format`` is cl5's ``format`` sub-checklist."""
    data = json.loads((REFERENCE / "checklists.json").read_text())
    by_id = {value["id"]: value for value in data.values()}
    base, _, group = checklist_id.partition("_")
    checklist = dict(by_id[base])
    if group:
        wanted = None if group == "ungrouped" else group
        checklist["items"] = [i for i in checklist["items"] if i["category"] == wanted]
    return checklist


def scorer_config(record: dict, **extra) -> dict:
    """The original's scorer config in this plugin's terms (``scorer_prompt`` is ``template``)."""
    config = dict(record["scorer_config"])
    if "scorer_prompt" in config:
        config["template"] = config.pop("scorer_prompt")
    config.update(extra)
    return config


def scripted_rules(record: dict, checklist: dict) -> list[dict]:
    """The record's mock replies as scripted-model rules: a batch reply answers any prompt; item
    replies answer the prompt that holds their question (item calls run concurrently)."""
    replies = []
    for mock in record["mock_responses"]:
        choice = mock["choices"][0]
        rule = {"content": choice["message"]["content"]}
        logprobs = (choice.get("logprobs") or {}).get("content")
        if logprobs:
            rule["logprobs"] = [{t["token"]: t["logprob"] for t in position["top_logprobs"]}
                                for position in logprobs]
        replies.append(rule)
    if record["scorer_config"].get("mode") == "item":
        return [{**reply, "contains": item["question"]} for reply, item in zip(replies, checklist["items"])]
    return replies


def case_for(record: dict, checklist: dict) -> dict:
    return {"id": record["case"], "input": checklist["input"], "candidate": record["target"],
            "metadata": {"checklist": checklist}}
