"""The `prompts` and `cache` command groups, run on their own with CliRunner."""

from __future__ import annotations

import json

import click
from click.testing import CliRunner

from evalyard import Application
from evalyard.testing import score_cases
from evalyard.cli import cache as cache_cli
from evalyard.cli import prompts as prompts_cli


def test_prompts_list_shows_sources_and_overrides(tmp_path):
    (tmp_path / "correctness.jinja").write_text("---\nfields: [candidate]\nanswer: binary\n---\n{{ candidate }}\n")
    result = CliRunner().invoke(prompts_cli.build_group(), ["list", "--json", "--prompts-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert rows["correctness"]["source"] == str(tmp_path / "correctness.jinja")
    assert rows["correctness"]["overrides"] == ["built-in"] and rows["relevance"]["source"] == "built-in"
    table = CliRunner().invoke(prompts_cli.build_group(), ["list"])
    assert "relevance" in table.output and "built-in" in table.output


def test_prompts_show_and_render(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases:\n  - {id: q1, input: 'Two plus two?', candidate: '4', reference: 'four'}\n")
    group = prompts_cli.build_group()
    shown = CliRunner().invoke(group, ["show", "correctness"])
    assert shown.exit_code == 0 and shown.stdout.startswith("---\ndescription:") and "from built-in" in shown.stderr
    rendered = CliRunner().invoke(group, ["render", "correctness", "--case", f"{suite}:q1", "--json"])
    messages = json.loads(rendered.output)
    assert messages[0]["role"] == "system" and "Two plus two?" in messages[1]["content"]


def test_render_unknown_case_is_one_line_exit_2(tmp_path):
    suite = tmp_path / "suite.jsonl"
    suite.write_text('{"id": "a", "candidate": "x"}\n')
    result = CliRunner().invoke(prompts_cli.build_group(), ["render", "criterion", "--case", f"{suite}:zzz"])
    assert result.exit_code == 2 and "no case with id 'zzz'" in result.output


def test_bad_template_is_one_line_with_file_and_line(tmp_path):
    (tmp_path / "bad.jinja").write_text("---\nfields: [candidate]\nanswer: binary\n---\n{{ candidate }\n")
    result = CliRunner().invoke(prompts_cli.build_group(), ["show", "bad", "--prompts-dir", str(tmp_path)])
    assert result.exit_code == 2 and f"{tmp_path / 'bad.jinja'}:5:" in result.output


def test_prompts_new_writes_a_working_scorer_template(tmp_path, layer, rules, run):
    result = CliRunner().invoke(prompts_cli.build_group(), ["new", "team/accuracy", "--answer", "score",
                                                             "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    again = CliRunner().invoke(prompts_cli.build_group(), ["new", "team/accuracy", "--dir", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.output
    from evalyard import Case
    from evalyard.prompting import PromptLibrary, scorer_from_template

    [template] = PromptLibrary([tmp_path], include_builtins=False).scorer_templates()
    scorer = scorer_from_template(template)(model=rules([{"content": "Good.\nANSWER: 5"}]))
    scorer.models = layer
    [score] = run(score_cases(scorer, [Case(id="1", input="q", candidate="a")]))
    assert scorer.name == "accuracy" and score.value == 1.0


def test_register_adds_the_groups():
    cli = click.Group("evalyard")
    prompts_cli.register(cli)
    cache_cli.register(cli)
    assert {"prompts", "cache"} <= set(cli.commands)


def test_cache_stats_and_clear(tmp_path, rules, run, fast_retry):
    from sqlalchemy import create_engine
    from sqlmodel import SQLModel

    from evalyard.models import SQLCache
    from evalyard.store.models import ModelCallRow

    engine = create_engine(f"sqlite:///{tmp_path / 'c.db'}")
    SQLModel.metadata.create_all(engine, tables=[ModelCallRow.__table__])
    model = rules([{"content": "ok"}])
    layer = Application().model_layer(cache=SQLCache(engine), retry=fast_retry)
    run(layer.complete(model, [{"role": "user", "content": "q"}]))
    group = cache_cli.build_group(engine_factory=lambda url: engine)
    stats = CliRunner().invoke(group, ["stats"])
    assert model in stats.output and "unknown" in stats.output
    assert json.loads(CliRunner().invoke(group, ["stats", "--json"]).output)[0]["calls"] == 1
    bad = CliRunner().invoke(group, ["clear", "--older-than", "soon"])
    assert bad.exit_code == 2 and "--older-than" in bad.output
    assert CliRunner().invoke(group, ["clear", "--older-than", "1d"]).output.strip() == "removed 0 cached calls"
    assert CliRunner().invoke(group, ["clear", "--model", model]).output.strip() == "removed 1 cached call"
    assert CliRunner().invoke(group, ["stats"]).output.strip() == "the cache is empty"


def test_render_shows_what_the_judge_is_sent(installed_plugins, app, tmp_path):
    """A small local judge is asked without reasoning by default, so that is what `render` shows for
    it (and says so); a hosted judge gets the reasoning variant; --reasoning chooses."""
    from evalyard.cli import cli

    suite = tmp_path / "suite.yaml"
    suite.write_text("cases:\n  - {id: q1, input: 'Two plus two?', candidate: '4', reference: 'four'}\n")

    def render(*options):
        result = CliRunner().invoke(cli, ["prompts", "render", "correctness", "--case", f"{suite}:q1", *options],
                                    obj=app, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    local = render("--judge-model", "local/small")
    assert "judge local/small is asked by default: without reasoning" in local.stderr
    assert "Reply with only `yes` or `no`" in local.stdout and "ANSWER:" not in local.stdout
    hosted = render("--judge-model", "openai/gpt-4o")
    assert "with reasoning" in hosted.stderr and "ANSWER:" in hosted.stdout
    chosen = render("--judge-model", "local/small", "--reasoning")
    assert "ANSWER:" in chosen.stdout and "asked by default" not in chosen.stderr
