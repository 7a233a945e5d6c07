"""The prompt library: Jinja2 templates with a front-matter header, answer shapes, and
prompt scorers built from them.

Templates are found in user directories first, then plugin-registered templates,
then the built-ins (the top-level ``prompts/`` directory, shipped in the core wheel).
Importing this package imports neither Jinja2 nor litellm.
"""

from .answers import ANSWER_KINDS, AnswerError, AnswerShape, Verdict, final_answer
from .ask import Judgement, ask, call_params
from .judge import Judge, resolve_template
from .library import PromptLibrary, builtin_dir
from .scorer import PromptScorer, missing_model_message, register_prompt_scorer, scorer_from_template
from .starter import starter_text, write_starter
from .template import TEMPLATE_FIELDS, PromptTemplate, RenderedPrompt, parse_template

__all__ = [
    "ANSWER_KINDS", "AnswerError", "AnswerShape", "Judge", "Judgement", "PromptLibrary", "PromptScorer", "PromptTemplate",
    "RenderedPrompt", "TEMPLATE_FIELDS", "Verdict", "ask", "builtin_dir", "call_params", "final_answer",
    "missing_model_message", "parse_template", "register_prompt_scorer", "resolve_template",
    "scorer_from_template",
    "starter_text", "write_starter",
]
