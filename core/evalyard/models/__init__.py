"""The model layer: every model call in evalyard goes through :class:`ModelLayer`.

Importing this package imports neither litellm nor an HTTP client; litellm is loaded
(offline, with its bundled price map) on the first model call.
"""

from .cache import MemoryCache, ResponseCache, SQLCache, cache_stats, clear_cache, parse_age
from .errors import CostLimitReached, ModelCallError, StructuredOutputError
from .keys import cache_key, key_inputs
from .layer import ModelLayer, ModelSettings, StructuredAnswer
from .limits import AdaptiveLimit, RequestRate, Slots
from .logprobs import label_probabilities, p_yes
from .records import CallRecord, CallUsage, Completion, PlannedRequest
from .retry import RetryPolicy
from .usage import Usage, UsageMeter, format_cost

__all__ = [
    "AdaptiveLimit", "CallRecord", "CallUsage", "Completion", "CostLimitReached", "MemoryCache",
    "ModelCallError", "ModelLayer", "ModelSettings", "PlannedRequest", "RequestRate", "ResponseCache", "RetryPolicy",
    "SQLCache", "Slots", "StructuredAnswer", "StructuredOutputError", "Usage", "UsageMeter",
    "cache_key", "cache_stats", "clear_cache", "format_cost", "key_inputs",
    "label_probabilities", "p_yes", "parse_age",
]
