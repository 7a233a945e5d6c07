"""``ragas/multimodal_faithfulness`` and ``ragas/multimodal_relevance`` against Ragas 0.4.3's
MultiModalFaithfulness and MultiModalRelevance (the real package in its own venv,
``tests/reference_envs.py``), both fed by one fake OpenAI server over HTTP: evalyard through the
real CLI, litellm and the whole model layer, Ragas through LangChain's ChatOpenAI.

Each case's texts carry ``case-k``; a rule per (metric, case) answers the two tools' prompts
(each in its own words, matched by a phrase of each) with the same reply. Ragas is given each
case's images as data URIs followed by its passages (its ``retrieved_contexts``); evalyard reads
the same image files from the case's input parts. Replies vary: clean verdicts, verdicts as
Ragas' lax booleans ("yes", 0, "No"), JSON inside prose or a fence, a reply no one can read (its
repair unreadable too), and an unreadable reply whose repair answers (each tool's repair prompt,
recognised by its own phrase, gets the verdict in the form that tool asks for).

The server keeps every request body: each image part's base64 is decoded and its sha256 must be
one of the case's files', in both tools' requests, and every image of a case must be sent.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random
import re
from collections import Counter

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli

pytestmark = pytest.mark.slow

#: metric -> (the reply's key, a phrase of Ragas' prompt, a phrase of ours)
METRICS = {
    "multimodal_faithfulness": ("faithful", "supported by the visual as well as textual context",
                                "You check statements against the pictures"),
    "multimodal_relevance": ("relevance", "is in line with the images and textual context",
                             "You check whether an answer to a question agrees"),
}
THEIR_REPAIR = "The output string did not satisfy the constraints"
OUR_REPAIR = "That reply could not be used"
GARBAGE = "I cannot tell from here."
#: replies both tools read alike ({key} is the metric's key), and what they read
READS = [('{{"{key}": true}}', 1.0), ('{{"{key}": false}}', 0.0), ('{{"{key}": "yes"}}', 1.0),
         ('{{"{key}": 0}}', 0.0), ('Looking at it:\n```json\n{{"{key}": true}}\n```', 1.0),
         ('I would say {{"{key}": "No"}} here.', 0.0), ('{{"{key}": 1, "why": "the chart shows it"}}', 1.0)]
SHAPES = ("one image", "two images", "image and passages", "image in a message", "text only", "empty answer",
          "unparseable judge output", "unparseable, then repaired")


def image(colour, fmt="PNG") -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (6, 4), colour).save(out, fmt)
    return out.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_case(k, shape, rng, files):
    """A case of ``shape``: its images (file names), passages, texts and each metric's reply."""
    tag = f"case-{k}"
    names = rng.sample(sorted(files), 2)
    case = {"k": k, "shape": shape, "question": f"{tag} What does the picture show?",
            "answer": f"{tag} It shows a {rng.choice(['red', 'green', 'blue'])} square.", "images": names[:1],
            "passages": [], "in_message": False}
    if shape == "two images":
        case["images"] = names
    if shape in ("image and passages", "empty answer", "unparseable, then repaired"):
        case["passages"] = [f"{tag} The chart is coloured by region.", f"{tag} Sales rose in March."]
    if shape == "image in a message":
        case["in_message"] = True
    if shape == "text only":
        case["images"], case["passages"] = [], [f"{tag} The square on the slide is red."]
    if shape == "empty answer":
        case["answer"] = ""
    case["replies"] = {}
    for metric, (key, _, _) in METRICS.items():
        if shape == "unparseable judge output":
            case["replies"][metric] = (GARBAGE, None)
        elif shape == "unparseable, then repaired":
            verdict = rng.choice([True, False])
            case["replies"][metric] = (GARBAGE, verdict)
        else:
            case["replies"][metric] = rng.choice(READS)[0].format(key=key), None
    return case


def all_cases(files):
    rng = random.Random(53)
    cases, k = [], 0
    for shape in SHAPES:
        for _ in range(4 if shape in ("one image", "two images", "image and passages") else 2):
            k += 1
            cases.append(make_case(k, shape, rng, files))
    return cases


def rules(cases):
    """The repairs first (a repair prompt holds the first prompt's phrase and tag too), then one
    rule per metric and case."""
    out = []
    for c in cases:
        for metric, (key, theirs, ours) in METRICS.items():
            reply, repaired = c["replies"][metric]
            tag = rf"\bcase-{c['k']}\b"
            if repaired is not None:
                answer = json.dumps({key: repaired})
                out.append({"regex": rf"{THEIR_REPAIR}[\s\S]*{theirs}[\s\S]*{tag}",
                            "content": json.dumps({"text": answer})})
                out.append({"regex": rf"{ours}[\s\S]*{tag}[\s\S]*{OUR_REPAIR}", "content": answer})
    for c in cases:
        for metric, (key, theirs, ours) in METRICS.items():
            out.append({"regex": rf"(?:{theirs}|{ours})[\s\S]*\bcase-{c['k']}\b", "content": c["replies"][metric][0]})
    return out


RAGAS = r"""
import asyncio, json, math, sys, warnings
warnings.simplefilter("ignore")
from langchain_openai import ChatOpenAI
from ragas.dataset_schema import SingleTurnSample
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import MultiModalFaithfulness, MultiModalRelevance

async def main(data):
    llm = LangchainLLMWrapper(ChatOpenAI(model="fake-judge", base_url=data["base_url"], api_key="none",
                                         max_retries=0))
    metrics = {"multimodal_faithfulness": MultiModalFaithfulness(llm=llm),
               "multimodal_relevance": MultiModalRelevance(llm=llm)}
    out = []
    for case in data["cases"]:
        row = {}
        for name, metric in metrics.items():
            sample = SingleTurnSample(user_input=case["question"], response=case["answer"],
                                      retrieved_contexts=case["contexts"])
            try:
                value = await metric.single_turn_ascore(sample)
                row[name] = None if math.isnan(value) else value
            except Exception as exc:  # an unreadable reply after its fixes: Ragas raises
                row[name] = None
        out.append(row)
    return out

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def data_uri(name, files):
    kind = "jpeg" if name.endswith(".jpg") else "png"
    return f"data:image/{kind};base64," + base64.b64encode(files[name]).decode()


def record(c):
    """The case as evalyard reads it: the question's text and images as input parts (or a message's)."""
    parts = [{"type": "text", "text": c["question"]}] + [{"type": "image_url", "image_url": {"url": name}}
                                                         for name in c["images"]]
    out = {"id": str(c["k"]), "input": parts, "candidate": c["answer"], "context": c["passages"]}
    if c["in_message"]:
        out["input"] = c["question"]
        out["messages"] = [{"role": "user", "content": parts}]
    return out


def sent_images(body):
    """The sha256 of each image part's decoded bytes in a request body."""
    found = []
    for message in body["messages"]:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            if part.get("type") == "image_url":
                url = part["image_url"]["url"]
                assert re.match(r"data:image/(png|jpeg);base64,", url), url[:40]
                found.append(sha(base64.b64decode(url.split(",", 1)[1])))
    return found


def tally(bodies, cases, files):
    """Requests per (metric, case k), read from the prompts; each image part checked against the
    case's files (the exact bytes), and how many image parts were checked."""
    from evalyard.testing.scripted import prompt_text

    by_k = {c["k"]: c for c in cases}
    counts, checked = Counter(), 0
    for body in bodies:
        prompt = prompt_text(body["messages"])
        k = int(re.search(r"\bcase-(\d+)\b", prompt).group(1))
        metric = next(m for m, (_, theirs, ours) in METRICS.items() if theirs in prompt or ours in prompt)
        counts[metric, k] += 1
        images = sent_images(body)
        if images:  # a first request (or our repair, which resends it): every image of the case, exactly
            assert sorted(images) == sorted(sha(files[n]) for n in by_k[k]["images"]), (metric, k)
            checked += len(images)
    return counts, checked


def run_evalyard(app, tmp_path, cases, server, *, vision=True, name="mm"):
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(record(c)) + "\n" for c in cases))
    model = {"api_base": server.base_url, **({"supports_vision": True} if vision else {})}
    suite = {"name": f"ragas-{name}", "data": data.name, "scorers": [f"ragas/{m}" for m in METRICS],
             "models": {"openai/fake-judge": model}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return CliRunner().invoke(cli, ["run", str(path), "--judge-model", "openai/fake-judge", "--json"], obj=app,
                              catch_exceptions=False)


def exported(app, run):
    run_id = json.loads(run.stdout)["run_id"]
    rows = CliRunner().invoke(cli, ["runs", "export", run_id], obj=app, catch_exceptions=False).stdout
    return {(r["scorer"].split("/")[-1], int(r["case_id"])): r for r in map(json.loads, rows.splitlines())}


@pytest.fixture
def image_files(tmp_path):
    files = {"red.png": image((220, 20, 20)), "green.png": image((20, 200, 20)), "blue.jpg": image((20, 20, 220), "JPEG"),
             "chart.png": image((250, 250, 0))}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return files


def test_multimodal_metrics_equal_ragas_and_both_send_the_exact_bytes(app, tmp_path, ragas_python, monkeypatch,
                                                                     image_files):
    from reference_envs import run_reference

    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    cases = all_cases(image_files)
    rules_file = tmp_path / "multimodal-rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules(cases), sort_keys=False))
    with FakeOpenAIServer(FakeServerConfig(rules=str(rules_file), record=True)) as server:
        theirs = run_reference(ragas_python, RAGAS, {"base_url": server.base_url, "cases": [
            {"question": c["question"], "answer": c["answer"],
             "contexts": [data_uri(n, image_files) for n in c["images"]] + c["passages"]} for c in cases]})
        their_calls, their_images = tally(server.stats.bodies, cases, image_files)
        server.stats.bodies.clear()
        run = run_evalyard(app, tmp_path, cases, server)
        assert run.exit_code in (0, 1), run.output
        our_calls, our_images = tally(server.stats.bodies, cases, image_files)
        ours = exported(app, run)
        before = server.stats.requests
        again = run_evalyard(app, tmp_path, cases, server)  # the cached rerun asks nothing
        assert again.exit_code in (0, 1) and server.stats.requests == before
        assert {key: r["value"] for key, r in exported(app, again).items()} == {key: r["value"] for key, r in ours.items()}

    table, differences = {}, []
    for c, row in zip(cases, theirs):
        for metric in METRICS:
            result = ours[metric, c["k"]]
            value, expected = result["value"], row[metric]
            if value != expected:
                differences.append((c["k"], c["shape"], metric, value, expected, result["error"]))
            if value is None:
                assert result["error"], result  # no value is a recorded error, never a silent gap
            else:
                assert result["details"][METRICS[metric][0]] == bool(value)
                assert result["details"]["images"] == len(c["images"])
            cell = table.setdefault((metric, c["shape"]), [0, 0, 0, 0])
            cell[0] += 1
            cell[1] += value == expected
            cell[2] += our_calls[metric, c["k"]]
            cell[3] += their_calls[metric, c["k"]]
            assert our_calls[metric, c["k"]] <= their_calls[metric, c["k"]], (metric, c["shape"])
    assert differences == []
    for metric in METRICS:  # the verdicts vary: a constant would not pass
        values = [row[metric] for row in theirs]
        assert {0.0, 1.0, None} <= set(values), (metric, values)
    image_count = sum(len(c["images"]) for c in cases)
    assert their_images >= 2 * image_count and our_images >= 2 * image_count
    print("\nmetric | shape | cases | equal | calls evalyard | calls ragas")
    for (metric, shape), (count, equal, mine, their) in table.items():
        print(f"{metric} | {shape} | {count} | {equal} | {mine} | {their}")
    print(f"total | | {len(cases) * 2} | {sum(t[1] for t in table.values())} | {sum(our_calls.values())} | "
          f"{sum(their_calls.values())}")
    print(f"image parts decoded and matched by sha256: ragas {their_images}, evalyard {our_images}")


def test_a_multimodal_judge_whose_model_cannot_take_images_is_refused_before_any_call(app, tmp_path, image_files):
    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    cases = [make_case(1, "text only", random.Random(1), image_files),
             make_case(2, "one image", random.Random(2), image_files)]
    with FakeOpenAIServer(FakeServerConfig(reply='{"faithful": true}', record=True)) as server:
        run = run_evalyard(app, tmp_path, cases, server, vision=False, name="blind")
        print("\n" + run.output.strip() + f"\nfake server requests: {server.stats.requests}")
        assert run.exit_code == 2, run.output
        errors = [line for line in run.output.splitlines() if line.startswith("Error:")]
        assert errors == [f"Error: {tmp_path / 'blind.jsonl'}:2: field 'input[1]': the model 'openai/fake-judge' of "
                          "scorer 'ragas/multimodal_faithfulness' cannot take images, and case "
                          "'2' holds an image (not declared by its provider or litellm; if it can, say "
                          "supports_vision: true under the model in the suite's models:)"], run.output
        assert server.stats.requests == 0


def test_a_case_with_audio_is_refused_by_the_image_judges_before_any_call(app, tmp_path):
    import wave

    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    clip = io.BytesIO()
    with wave.open(clip, "wb") as out:
        out.setnchannels(1), out.setsampwidth(2), out.setframerate(8000), out.writeframes(b"\x01\x00" * 400)
    (tmp_path / "clip.wav").write_bytes(clip.getvalue())
    data = tmp_path / "audio.jsonl"
    data.write_text(json.dumps({"id": "clip", "input": [
        {"type": "text", "text": "What is said?"},
        {"type": "input_audio", "input_audio": {"data": "clip.wav", "format": "wav"}}], "candidate": "hello"}) + "\n")
    with FakeOpenAIServer(FakeServerConfig(reply='{"faithful": true}', record=True)) as server:
        suite = tmp_path / "audio.yaml"
        suite.write_text(yaml.safe_dump({"name": "audio", "data": data.name, "scorers": ["ragas/multimodal_faithfulness"],
                                         "models": {"openai/fake-judge": {"api_base": server.base_url,
                                                                          "supports_vision": True,
                                                                          "supports_audio_input": True}}}))
        run = CliRunner().invoke(cli, ["run", str(suite), "--judge-model", "openai/fake-judge"], obj=app)
        assert run.exit_code == 2, run.output
        assert "scorer 'ragas/multimodal_faithfulness' would show its model 'openai/fake-judge' a text stand-in of " \
               "case 'clip': its prompt does not place the case's audio" in run.output
        assert server.stats.requests == 0
