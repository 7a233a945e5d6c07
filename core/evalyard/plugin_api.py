"""The public plugin API: every name a plugin may use, declared here once.

A plugin imports these from ``evalyard`` (``from evalyard import hookimpl, Scorer, ask``) and
nothing else from the core; a test walks every plugin's imports to hold it to that. The names
below are loaded when first used, so importing ``evalyard`` stays cheap (no Jinja2, no litellm,
no click): ``evalyard.__getattr__`` resolves them from this table.
"""

from __future__ import annotations

#: public name -> (module under ``evalyard``, attribute)
LAZY: dict[str, tuple[str, str]] = {
    # judging: the one judge call, its answers and its usage
    "ask": ("prompting.ask", "ask"),
    "Judgement": ("prompting.ask", "Judgement"),
    "Judge": ("prompting.judge", "Judge"),
    "resolve_template": ("prompting.judge", "resolve_template"),
    "call_params": ("prompting.ask", "call_params"),
    "AnswerShape": ("prompting.answers", "AnswerShape"),
    "AnswerError": ("prompting.answers", "AnswerError"),
    "Usage": ("models.usage", "Usage"),
    # embeddings by model name, through the model layer (cache, retries, limits, usage)
    "embed": ("models.embeddings", "embed"),
    # run --plan: a call rendered and keyed, not sent (``Scorer.planned_requests``), and which
    # of such calls the response cache already answers
    "cached_calls": ("store.queries", "cached_calls"),
    "PlannedRequest": ("models.records", "PlannedRequest"),
    "planned_asks": ("prompting.ask", "planned_asks"),
    # prompt templates and prompt scorers
    "PromptScorer": ("prompting.scorer", "PromptScorer"),
    # a suite's `models:` section (provider settings per model), read and checked as a suite's is
    "parse_model_settings": ("suite_files", "parse_model_settings"),
    "PromptLibrary": ("prompting.library", "PromptLibrary"),
    "PromptTemplate": ("prompting.template", "PromptTemplate"),
    "parse_template": ("prompting.template", "parse_template"),
    # model calls: errors a plugin may let through or catch, and model providers
    "CostLimitReached": ("models.errors", "CostLimitReached"),
    "ModelCallError": ("models.errors", "ModelCallError"),
    "load_litellm": ("models.providers", "load_litellm"),
    # runtime services
    "Runtime": ("runtime", "Runtime"),
    "run_sync": ("runner", "run_sync"),
    "StopRun": ("errors", "StopRun"),
    # executors a plugin adds (``register_executors``): the batch protocol and how workers find scorers
    "BatchStopped": ("errors", "BatchStopped"),
    "ExecutorUnavailable": ("errors", "ExecutorUnavailable"),
    "class_reference": ("scorer_ref", "class_reference"),
    "ScorerRef": ("scorer_ref", "ScorerRef"),
    "Outcome": ("scorer_ref", "Outcome"),
    "import_file": ("plugins", "import_file"),
    # epoch reducers a plugin adds (``register_reducers``): what a reducer reads and returns
    "Trial": ("analysis.reducers", "Trial"),
    "Reduced": ("analysis.reducers", "Reduced"),
    "Reducer": ("analysis.reducers", "Reducer"),
    # calibration of a judge against human labels
    "source_value": ("analysis.calibration", "source_value"),
    # command-line helpers for ``register_commands``
    "CLIError": ("cli.options", "CLIError"),
    "current_app": ("cli.options", "current_app"),
    "echo_json": ("cli.options", "echo_json"),
    "table": ("cli.options", "table"),
    "OneLineErrors": ("cli.prompts", "OneLineErrors"),
    # output formats (``register_outputs``): what a sink reads
    "RunSource": ("outputs", "RunSource"),
    # case parsing, for a plugin's own data format
    "case_from_record": ("cases", "case_from_record"),
    "check_unique_ids": ("cases", "check_unique_ids"),
    "read_case_file": ("cases", "read_text"),
    "parse_case_json": ("cases", "parse_json"),
    "load_json_cases": ("cases", "load_json"),
    "load_jsonl_cases": ("cases", "load_jsonl"),
    # a case's dialogue fields, checked as evalyard checks them (one line naming file, line, field)
    "check_messages": ("dialogue", "check_messages"),
    "check_tools": ("dialogue", "check_tools"),
    # a ranking as cases hold it ({id, text, score} passages or texts), checked as evalyard checks it
    "check_retrieved": ("retrieval", "check_retrieved"),
    # ... and in its ranking's order (trec_eval's: score descending, ties by id descending)
    "ranked_passages": ("retrieval", "ranked_passages"),
}


def resolve(name: str):
    from importlib import import_module

    module, attribute = LAZY[name]
    return getattr(import_module(f"evalyard.{module}"), attribute)
