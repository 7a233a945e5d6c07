"""A grid of two vision models over an image suite, judged by a judge that sees the images, fully
offline: three fake OpenAI-style servers on 127.0.0.1 stand in for the two models under test and
the judge (no vision model's weights are in any reachable package).

    python examples/media_demo/vision_grid.py WORK_DIR

writes six PNG squares and a suite into WORK_DIR, runs

    evalyard run suite.yaml -m openai/vision-a -m openai/vision-b \\
        -s ragas/multimodal_faithfulness -s contains --judge-model openai/vision-judge

and prints the grid's table, what each server received (every image part decoded and held
against the files' sha256), then the refusal of a judge whose prompt does not place the images,
with the number of requests it cost (none). The servers answer from rules that see a request's
text only: model A names every square's colour, model B gets two wrong (pink, grey), and the
judge, a stand-in, knows that no square is pink or grey. What is real is the path: the exact
bytes of each image reach each model and the judge, and the table is evalyard's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from PIL import Image, ImageDraw

from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

COLOURS = {"red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 220), "yellow": (230, 200, 20),
           "purple": (130, 40, 160), "orange": (240, 130, 20)}
#: model B's wrong answers, by case
B_WRONG = {"q1": "pink", "q3": "grey"}


def write_suite(work: Path) -> None:
    cases = []
    for i, (name, rgb) in enumerate(COLOURS.items()):
        image = Image.new("RGB", (160, 120), (245, 245, 245))
        ImageDraw.Draw(image).rectangle((40, 20, 120, 100), fill=rgb)
        image.save(work / f"square{i}.png")
        cases.append({"id": f"q{i}", "reference": name, "input": [
            {"type": "text", "text": f"Square {i}: what colour is the square?"},
            {"type": "image_url", "image_url": {"url": f"square{i}.png"}}]})
    (work / "squares.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    answers = {"a": {}, "b": B_WRONG}
    for model, wrong in answers.items():
        rules = [{"contains": f"Square {i}:", "content": f"The square is {wrong.get(f'q{i}', name)}."}
                 for i, name in enumerate(COLOURS)]
        _write_rules(work / f"rules_{model}.jsonl", rules)
    _write_rules(work / "rules_judge.jsonl", [
        {"regex": r"The square is (pink|grey)\.", "content": '{"faithful": false}'},
        {"contains": "The square is", "content": '{"faithful": true}'}])


def _write_rules(path: Path, rules: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rules), encoding="utf-8")


def image_hashes(server: FakeOpenAIServer) -> list[str]:
    """The sha256 of every image part's decoded bytes in the requests ``server`` received."""
    found = []
    for body in server.stats.bodies:
        for message in body["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else ():
                if part["type"] == "image_url":
                    found.append(hashlib.sha256(base64.b64decode(part["image_url"]["url"].split(",", 1)[1])).hexdigest())
    return found


def evalyard(work: Path, *args: str) -> int:
    command = [str(Path(sys.executable).with_name("evalyard")), *args]
    print("$ evalyard " + " ".join(args), flush=True)
    env = {**os.environ, "FAKE_KEY": "sk-fake", "EVALYARD_HOME": str(work / "home")}
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    print(done.stdout + done.stderr, end="", flush=True)
    return done.returncode


def main(work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    write_suite(work)
    servers = {name: FakeOpenAIServer(FakeServerConfig(rules=str(work / f"rules_{name}.jsonl"), record=True)).start()
               for name in ("a", "b", "judge")}
    try:
        lines = ["name: squares", "data: squares.jsonl", "models:"]
        for name, model in (("a", "openai/vision-a"), ("b", "openai/vision-b"), ("judge", "openai/vision-judge")):
            lines += [f"  {model}:", f"    api_base: {servers[name].base_url}", "    api_key_env: FAKE_KEY",
                      "    supports_vision: true"]
        (work / "suite.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        status = evalyard(work, "run", "suite.yaml", "-m", "openai/vision-a", "-m", "openai/vision-b",
                          "-s", "ragas/multimodal_faithfulness", "-s", "contains", "--judge-model",
                          "openai/vision-judge", "--name", "squares")
        files = {hashlib.sha256((work / f"square{i}.png").read_bytes()).hexdigest() for i in range(len(COLOURS))}
        for name, server in servers.items():
            received = image_hashes(server)
            print(f"server {name}: {server.stats.requests} requests, {len(received)} image parts, "
                  f"{'each the exact bytes of a square' if set(received) <= files else 'NOT the files bytes'}")
        before = sum(server.stats.requests for server in servers.values())
        refused = evalyard(work, "run", "suite.yaml", "-m", "openai/vision-a", "-s", "criteria/correctness",
                           "--judge-model", "openai/vision-judge")
        print(f"exit {refused}; requests it cost: {sum(s.stats.requests for s in servers.values()) - before}")
        return status
    finally:
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/media_demo/vision_grid.py WORK_DIR")
    sys.exit(main(Path(sys.argv[1])))
