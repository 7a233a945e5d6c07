"""Reading suites: a YAML suite file, or a plain data file (JSONL, JSON, CSV) used as a suite.

A YAML suite looks like::

    name: quickstart
    description: Capital cities and friends
    data: quickstart.jsonl        # or `cases:` with the cases inline
    format: jsonl                 # optional: the data format by name (default: by the file's ending)
    fields: {candidate: answer}   # optional: case field -> column in the data
    scorers:
      - exact_match
      - word_count_match:threshold=0.8   # the CLI's --scorer form
      - name: readability
        config: {arthur_compat: false}
        threshold: 50
    thresholds: {exact_match: 1}  # optional, per scorer

Every error names the file, the line and the field.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .errors import InputError, PluginError, UnknownNameError
from .cases import check_case_text
from .valid_text import check_text
from .registry import Registry
from .scoring import CASE_FIELDS, Case
from .suite import CALIBRATED, ScorerSpec, Suite

SUITE_KEYS = ("name", "description", "data", "format", "cases", "fields", "scorers", "thresholds", "models",
              "prompts", "executor", "cluster", "matrix", "epochs", "reducer", "generator", "extract", "qrels")
MODEL_KEYS = ("api_base", "api_key_env", "params", "concurrency", "rpm", "timeout", "batch", "batch_poll_s",
              "supports_schema", "supports_logprobs", "supports_vision", "supports_audio_input")

#: Keys people try that mean something else here: refused with the reason instead of ignored.
REFUSED_SUITE_KEYS = {
    "version": "a suite's version is the hash of its cases, computed by evalyard; remove 'version' "
               "(put a label in 'description' or 'name')",
}


class _LineDict(dict):
    """A YAML mapping that remembers the line it started on, and each key's line."""

    line = 0
    key_lines: dict[Any, int] = {}


class _LineList(list):
    """A YAML sequence that remembers the line of each item."""

    line = 0
    item_lines: list[int] = []


def _yaml_loader():
    import yaml

    class LineLoader(yaml.SafeLoader):
        pass

    def construct_mapping(loader, node, deep=False):
        loader.flatten_mapping(node)
        mapping = _LineDict(loader.construct_pairs(node, deep=deep))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {getattr(k, "value", None): k.start_mark.line + 1 for k, _ in node.value}
        return mapping

    def construct_sequence(loader, node, deep=False):
        items = _LineList(loader.construct_object(child, deep=deep) for child in node.value)
        items.line = node.start_mark.line + 1
        items.item_lines = [child.start_mark.line + 1 for child in node.value]
        return items

    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence)
    return yaml, LineLoader


def _line_of(value: Any, default: int = 1) -> int:
    return getattr(value, "line", default) or default


def _key_line(mapping: Any, key: str, default: int) -> int:
    """The line of ``key`` in a YAML mapping (where its own error is), else ``default``."""
    return getattr(mapping, "key_lines", {}).get(key, default)


def parse_scorer_option(text: str, path: str | None = None, line: int | None = None,
                        option: str = "--scorer") -> ScorerSpec:
    """``NAME[:key=value,key=value]`` (``--scorer``, or an item of a suite's ``scorers:`` list when
    ``path`` is given) into a ScorerSpec; errors name the option, or the file, line and field."""
    def bad(message: str) -> InputError:
        if path is not None:
            return InputError(f"{text!r}: {message}", path=path, line=line, field="scorers")
        return InputError(f"{option} {text!r}: {message}")

    name, _, options = text.partition(":")
    config: dict[str, Any] = {}
    if options:
        for part in options.split(","):
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                raise bad("expected NAME:key=value[,key=value...]")
            config[key.strip()] = value.strip()
    threshold = config.pop("threshold", None)
    try:
        threshold = float(threshold) if threshold not in (None, CALIBRATED) else threshold
    except ValueError:
        raise bad(f"threshold must be a number or {CALIBRATED!r}") from None
    batch_size = config.pop("batch_size", None)
    if batch_size is not None and not (batch_size.isdigit() and int(batch_size) >= 1):
        raise bad(f"batch_size must be a whole number of at least 1, not {batch_size!r}")
    if not name.strip():
        raise bad("expected a scorer name before ':'")
    origin = f"{path}:{line}" if path is not None else f"{option} {text!r}"
    return ScorerSpec(name=name.strip(), config=config, threshold=threshold, origin=origin,
                      batch_size=int(batch_size) if batch_size is not None else None)


def _scorer_specs(raw: Any, thresholds: Any, path: str, line: int, registry: Registry) -> list[ScorerSpec]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("expected a list of scorers", path=path, line=line, field="scorers")
    specs = []
    item_lines = getattr(raw, "item_lines", [])
    for position, item in enumerate(raw):
        if position < len(item_lines):
            line = item_lines[position]
        if isinstance(item, str):  # a bare name, or the CLI's NAME:key=value,... form
            specs.append(parse_scorer_option(item, path=path, line=line))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise InputError("each scorer is a name or a mapping with 'name'", path=path, line=_line_of(item, line),
                             field="scorers")
        item_line = _line_of(item, line)
        unknown = set(item) - {"name", "config", "threshold", "reducer", "batch_size", "extract"}
        if unknown:
            raise InputError(f"unknown key {sorted(unknown)[0]!r} (known: name, config, threshold, reducer, batch_size, "
                             "extract)",
                             path=path, line=item_line, field="scorers")
        config = item.get("config") or {}
        if not isinstance(config, dict):
            raise InputError("expected a mapping", path=path, line=item_line, field=f"scorers.{item['name']}.config")
        threshold = item.get("threshold")
        if threshold not in (None, CALIBRATED) and (isinstance(threshold, bool)
                                                    or not isinstance(threshold, (int, float))):
            raise InputError(f"expected a number or {CALIBRATED!r}", path=path, line=item_line, field=f"scorers.{item['name']}.threshold")
        reducer = _reducer(item.get("reducer"), path, _key_line(item, "reducer", item_line),
                           f"scorers.{item['name']}.reducer", registry)
        batch_size = item.get("batch_size")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
            raise InputError("expected a whole number of at least 1", path=path, line=item_line,
                             field=f"scorers.{item['name']}.batch_size")
        specs.append(ScorerSpec(name=item["name"], config=dict(config), threshold=threshold,
                                origin=f"{path}:{item_line}", reducer=reducer, batch_size=batch_size,
                                extract=_extract(item.get("extract"), path, _key_line(item, "extract", item_line),
                                                 f"scorers.{item['name']}.extract")))
    if thresholds is not None:
        if not isinstance(thresholds, dict):
            raise InputError("expected a mapping of scorer name to number", path=path, line=line, field="thresholds")
        by_name = {s.name: s for s in specs}
        for name, value in thresholds.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError("expected a number", path=path, line=_line_of(thresholds, line),
                                 field=f"thresholds.{name}")
            if name in by_name:
                by_name[name].threshold = float(value)
            else:
                specs.append(ScorerSpec(name=name, threshold=float(value), origin=f"{path}:{_line_of(thresholds)}"))
    return specs


def _extract(raw: Any, path: str, line: int, field: str) -> tuple[str, ...] | None:
    """Extraction steps (a step, or a list of them in order), checked; None when absent."""
    if raw is None:
        return None
    from .extraction import parse_extraction

    try:
        return parse_extraction(raw if isinstance(raw, (str, list)) else [raw], "extract").steps
    except InputError as exc:
        raise InputError(str(exc).removeprefix("extract: "), path=path, line=line, field=field) from None


def _reducer(raw: Any, path: str, line: int, field: str, registry: Registry) -> str | None:
    """A reducer spec (``pass_at_k:k=2``), checked against the registered reducers; None when absent."""
    if raw is None:
        return None
    from .analysis.reducers import parse_reducer

    if not isinstance(raw, str):
        raise InputError(f"expected a reducer name (known: {registry.reducers.known()}; pass_at_k and at_least_k "
                         "take k=N)", path=path, line=line, field=field)
    try:
        return parse_reducer(raw, field, registry.reducers).spec
    except InputError as exc:
        raise InputError(str(exc).split(": ", 1)[-1], path=path, line=line, field=field) from None


def _epochs(raw: Any, path: str, line: int, field: str = "epochs") -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise InputError("expected a whole number of epochs, 1 or more", path=path, line=line, field=field)
    return raw


def _judged(read: Callable[[], Iterator[tuple[Case, str]]], qrels: str | Path | None):
    """``read`` with each case's ``relevant`` filled from the qrels file (read once, now)."""
    if qrels is None:
        return read
    from .trec import read_qrels, with_qrels

    judged = read_qrels(qrels)
    return lambda: with_qrels(read(), judged)


def data_file_reader(path: Path, registry: Registry, field_map: dict[str, str] | None = None,
                     format: str | None = None) -> Callable[[], Iterator[tuple[Case, str]]]:
    """A function that reads a data file's cases afresh on each call, as ``(case, "file:line")``
    pairs, by the format named, else by the format its file name's ending belongs to (never by
    its content). A streaming format is read a record at a time; a format whose loader returns
    a list is read once and kept. The file's first case is read here, so an empty file, a
    missing one or a bad first record fails now."""
    try:
        entry = registry.loader_for(path, format)
    except UnknownNameError as exc:
        message = str(exc)
        if format:  # the registry's message lists the names; say where they are used
            message = f"{message}; formats and their file endings: {registry.known_formats()}"
        raise InputError(message, path=str(path)) from None
    if not path.is_file():
        raise InputError("file not found", path=str(path))
    field_map = field_map or {}

    def bad(kind: str) -> PluginError:
        return PluginError(f"data format {entry.qualified} from plugin {entry.plugin!r} returned {kind}, not a "
                           "list of evalyard.Case or an iterator of (case, origin) pairs")

    def checked(pairs: Iterable[Any]) -> Iterator[tuple[Case, str]]:
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Case)):
                raise bad(f"an item {type(pair).__name__}")
            check_case_text(pair[0], str(pair[1]))  # a plugin's format builds its cases itself
            yield pair[0], str(pair[1])

    loaded = entry.obj.load(path, field_map)
    if isinstance(loaded, Iterator):  # a streaming format: read again on each call
        first = next(checked(loaded), None)
        if first is None:
            raise InputError("the file has no cases", path=str(path), line=1)

        def read() -> Iterator[tuple[Case, str]]:
            return checked(entry.obj.load(path, field_map))
        return read
    # The hook allows a list of cases, or (cases, origins) to name each case's line.
    if isinstance(loaded, tuple) and len(loaded) == 2:
        cases, origins = loaded
    else:
        cases, origins = loaded, None
    if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
        raise bad(type(cases).__name__)
    if origins is None or len(origins) != len(cases):
        origins = [str(path)] * len(cases)
    if not cases:
        raise InputError("the file has no cases", path=str(path), line=1)
    pairs = list(zip(cases, [str(o) for o in origins]))
    for case, origin in pairs:
        check_case_text(case, origin)
    return lambda: iter(pairs)


def load_data_file(path: Path, registry: Registry, field_map: dict[str, str] | None = None,
                   format: str | None = None) -> tuple[list[Case], list[str]]:
    """A whole data file as (cases, ``file:line`` origins), ids checked: for files that fit in memory."""
    from .cases import check_unique_ids

    cases, origins = [], []
    for case, origin in data_file_reader(path, registry, field_map, format)():
        cases.append(case)
        origins.append(origin)
    check_unique_ids(cases, origins)
    return cases, origins


def load_suite(path: str | Path, registry: Registry, *, format: str | None = None,
               field_map: dict[str, str] | None = None, qrels: str | Path | None = None) -> tuple[Suite, list[str]]:
    """Load a suite and the ``file:line`` origin of each case. ``format`` and ``field_map``
    (``--format``, ``--field``) apply to a data file given directly; a YAML suite says its own.
    ``qrels`` (``--qrels``): relevance judgements filling each case's ``relevant`` by its id,
    over a suite's own ``qrels:``."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=str(path))
    field_map = check_field_map(field_map or {})
    if path.suffix.lower() not in (".yaml", ".yml") or format:
        read = _judged(data_file_reader(path, registry, field_map, format), qrels)
        suite = Suite(name=path.stem, source=str(path), read=read)
        return suite, suite.origins
    if field_map:
        raise InputError("--field maps a data file's columns; a YAML suite maps them in its own 'fields:'",
                         path=str(path))

    from .cases import read_text

    yaml, loader = _yaml_loader()
    text = read_text(path)
    try:
        doc = yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed YAML: {problem}", path=str(path), line=mark.line + 1 if mark else None) from None
    except RecursionError:
        raise InputError("YAML nested too deeply", path=str(path), line=1) from None
    sp = str(path)
    check_text(doc, path=sp, line=1, json_values=False)  # before any message quotes a key or value of it
    if not isinstance(doc, dict):
        raise InputError("a suite file is a mapping with 'name' and 'cases' or 'data'", path=sp, line=1)
    refused = [k for k in doc if k in REFUSED_SUITE_KEYS]
    if refused:
        raise InputError(REFUSED_SUITE_KEYS[refused[0]], path=sp, line=_line_of(doc), field=refused[0])
    unknown = [k for k in doc if k not in SUITE_KEYS]
    if unknown:
        raise InputError(f"unknown key (known: {', '.join(SUITE_KEYS)})", path=sp, line=_line_of(doc), field=unknown[0])
    name = doc.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise InputError("expected a non-empty name", path=sp, line=_line_of(doc), field="name")
    description = doc.get("description") or ""
    field_map = doc.get("fields") or {}
    if not isinstance(field_map, dict) or not all(isinstance(v, str) for v in field_map.values()):
        raise InputError("expected a mapping of case field to column name", path=sp, line=_line_of(doc), field="fields")
    check_field_map(field_map, sp, _line_of(field_map))
    data_format = doc.get("format")
    if data_format is not None and (not isinstance(data_format, str) or not data_format):
        raise InputError("expected the name of a data format", path=sp, line=_line_of(doc), field="format")

    if ("data" in doc) == ("cases" in doc):
        raise InputError("give exactly one of 'data' (a file) or 'cases' (inline)", path=sp, line=_line_of(doc),
                         field="data")
    if "data" in doc:
        if not isinstance(doc["data"], str):
            raise InputError("expected a file path", path=sp, line=_line_of(doc), field="data")
        data_path = (path.parent / doc["data"]).resolve()
        try:
            data_path = data_path.relative_to(Path.cwd())
        except ValueError:
            pass
        cases, origins, read = None, None, data_file_reader(data_path, registry, field_map, data_format)
    else:
        from .cases import check_unique_ids, case_from_record

        raw_cases = doc["cases"]
        if not isinstance(raw_cases, list):
            raise InputError("expected a list of cases", path=sp, line=_line_of(doc), field="cases")
        cases, origins = [], []
        for i, record in enumerate(raw_cases):
            line = _line_of(record, _line_of(doc))
            cases.append(case_from_record(record, path=sp, line=line, index=i, field_map=field_map))
            origins.append(f"{sp}:{line}")
        check_unique_ids(cases, origins)
        read = None
        if not cases:
            raise InputError("the suite has no cases", path=sp, line=_line_of(doc), field="cases")

    if qrels is None and doc.get("qrels") is not None:
        if not isinstance(doc["qrels"], str):
            raise InputError("expected a file path", path=sp, line=_key_line(doc, "qrels", _line_of(doc)), field="qrels")
        qrels = path.parent / doc["qrels"]
    if qrels is not None:
        if read is not None:
            read = _judged(read, qrels)
        else:
            from .trec import read_qrels, with_qrels

            cases = [case for case, _ in with_qrels(zip(cases, origins), read_qrels(qrels))]
    scorers = _scorer_specs(doc.get("scorers"), doc.get("thresholds"), sp, _line_of(doc), registry)
    models = parse_model_settings(doc.get("models"), sp, _line_of(doc))
    prompts = doc.get("prompts") or []
    if isinstance(prompts, str):
        prompts = [prompts]
    if not isinstance(prompts, list) or not all(isinstance(d, str) for d in prompts):
        raise InputError("expected a directory or a list of directories", path=sp, line=_line_of(doc), field="prompts")
    prompt_dirs = [str((path.parent / d).resolve()) for d in prompts]
    for directory in prompt_dirs:
        if not Path(directory).is_dir():
            raise InputError(f"prompt directory {directory} does not exist", path=sp, line=_line_of(doc),
                             field="prompts")
    executor = doc.get("executor")
    if executor is not None and (not isinstance(executor, str) or not executor.strip()):
        raise InputError("expected an executor name (thread, process, or one a plugin registers)", path=sp,
                         line=_line_of(doc), field="executor")
    cluster = doc.get("cluster")
    if cluster is not None:
        from .analysis.clustering import parse_cluster

        try:
            parse_cluster(cluster if isinstance(cluster, str) else "")
        except InputError:
            raise InputError("expected metadata.FIELD (the case metadata that groups cases)", path=sp,
                             line=_line_of(doc), field="cluster") from None
    epochs = _epochs(doc.get("epochs"), sp, _line_of(doc))
    default_reducer = _reducer(doc.get("reducer"), sp, _key_line(doc, "reducer", _line_of(doc)), "reducer", registry)
    if default_reducer is not None:
        for spec in scorers:
            spec.reducer = spec.reducer or default_reducer
    matrix = parse_matrix(doc.get("matrix"), sp, _line_of(doc), models)
    suite = Suite(name=name, cases=cases, description=str(description), scorers=scorers, source=sp, models=models,
                  prompt_dirs=prompt_dirs, executor=executor.strip() if executor else None, read=read,
                  origins=origins, cluster=cluster)
    suite.matrix = matrix
    suite.epochs = epochs if epochs is not None else (matrix or {}).get("epochs")
    suite.generator = _generator(doc.get("generator"), sp, _line_of(doc))
    suite.extract = _extract(doc.get("extract"), sp, _key_line(doc, "extract", _line_of(doc)), "extract")
    return suite, suite.origins


def _generator(raw: Any, path: str, line: int) -> tuple[str, dict[str, Any]] | None:
    """A suite's ``generator:``: ``NAME[:key=value,...]``, or a mapping with ``name`` and the
    generator's config (values of any YAML type: a mapping of tool functions, a list)."""
    if raw is None:
        return None
    if isinstance(raw, str):
        spec = parse_scorer_option(raw, option="generator")
        return spec.name, spec.config
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"].strip():
        raise InputError("expected NAME[:key=value,...] or a mapping with `name` and the generator's config",
                         path=path, line=_line_of(raw, line), field="generator")
    return raw["name"].strip(), {k: v for k, v in raw.items() if k != "name"}


def check_field_map(field_map: dict[str, str], path: str | None = None, line: int | None = None) -> dict[str, str]:
    """A field map's keys must be case fields (``input=question``: the case's input is the
    data's ``question`` column). Without ``path`` the map came from ``--field`` options."""
    bad = [f for f in field_map if f not in CASE_FIELDS]
    if bad and path is None:
        raise InputError(f"--field {bad[0]}={field_map[bad[0]]}: {bad[0]!r} is not a case field "
                         f"({', '.join(CASE_FIELDS)})")
    if bad:
        raise InputError(f"not a case field ({', '.join(CASE_FIELDS)})", path=path, line=line, field=f"fields.{bad[0]}")
    return field_map


def parse_field_options(values: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``--field CASE_FIELD=COLUMN`` options into a field map."""
    field_map: dict[str, str] = {}
    for text in values:
        case_field, eq, column = text.partition("=")
        if not eq or not case_field.strip() or not column.strip():
            raise InputError(f"--field {text!r}: expected CASE_FIELD=COLUMN (e.g. reference=gold)")
        if case_field.strip() in field_map:
            raise InputError(f"--field {text!r}: {case_field.strip()} is mapped twice")
        field_map[case_field.strip()] = column.strip()
    return field_map


def parse_matrix(raw: Any, path: str, line: int, models: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """A suite's ``matrix:`` block: the grid ``evalyard run SUITE`` runs as an experiment.

    ``models``: model strings, or mappings ``{model: MODEL, ...provider settings}`` (a cell's own
    ``api_base``, ``seed``...: added to the suite's ``models:`` settings, which must not say
    otherwise); ``prompts``: template names (``null`` for the case's input as it is); ``params``:
    generation setting -> list of values; ``epochs``: trials per case in every cell."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InputError("expected a mapping with models, prompts and params", path=path, line=line, field="matrix")
    unknown = sorted(set(raw) - {"models", "prompts", "params", "epochs"})
    if unknown:
        raise InputError("unknown key (known: models, prompts, params, epochs)", path=path, line=_line_of(raw, line),
                         field=f"matrix.{unknown[0]}")
    listed = raw.get("models")
    if not isinstance(listed, list) or not listed:
        raise InputError("expected a list of model strings", path=path, line=_line_of(raw, line), field="matrix.models")
    names = []
    for n, entry in enumerate(listed):
        where, field = _line_of(entry, _line_of(raw, line)), f"matrix.models[{n}]"
        if isinstance(entry, dict):
            entry = dict(entry)
            model = entry.pop("model", None)
            if not isinstance(model, str) or not model:
                raise InputError("a model with settings needs `model: MODEL`", path=path, line=where, field=field)
            _check_model_settings(entry, path, where, field)
            if model in models and models[model] != entry:
                raise InputError(f"{model} has other settings under models:", path=path, line=where, field=field)
            models[model] = entry
        elif isinstance(entry, str) and entry:
            model = entry
        else:
            raise InputError("expected a model string or a mapping with model:", path=path, line=where, field=field)
        names.append(model)
    prompts = raw.get("prompts", [None])
    if not isinstance(prompts, list) or not prompts or not all(p is None or isinstance(p, str) for p in prompts):
        raise InputError("expected a list of prompt template names", path=path, line=_line_of(raw, line),
                         field="matrix.prompts")
    params = raw.get("params") or {}
    if not isinstance(params, dict) or not all(isinstance(v, list) and v for v in params.values()):
        raise InputError("expected a mapping of setting name to a list of values", path=path,
                         line=_line_of(raw, line), field="matrix.params")
    epochs = _epochs(raw.get("epochs"), path, _line_of(raw, line), "matrix.epochs")
    return {"models": names, "prompts": prompts, "params": {str(k): list(v) for k, v in params.items()},
            "epochs": epochs}


def parse_model_settings(raw: Any, path: str, line: int) -> dict[str, dict[str, Any]]:
    """The suite's ``models:`` section: model string -> provider settings. Keys other than the
    known settings are request parameters (``seed``, ``top_p``...)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError("expected a mapping of model string to settings", path=path, line=line, field="models")
    out = {}
    for model, settings in raw.items():
        where = _line_of(settings, _line_of(raw, line))
        if settings is None:
            settings = {}
        if not isinstance(model, str) or not isinstance(settings, dict):
            raise InputError("expected settings (a mapping) for each model string", path=path, line=where,
                             field=f"models.{model}")
        _check_model_settings(settings, path, where, f"models.{model}")
        out[model] = dict(settings)
    return out


#: What a pydantic error type means, said the way every other input error here says it.
_EXPECTED = {"string_type": "expected text", "dict_type": "expected a mapping", "bool_type": "expected true or false",
             "int_type": "expected a positive whole number", "greater_than": "expected a positive number",
             "float_type": "expected a positive number", "int_from_float": "expected a positive whole number"}


def _check_model_settings(settings: dict[str, Any], path: str, line: int, field: str) -> None:
    """The types of one model's settings (``evalyard.models.ModelSettings``), checked by pydantic:
    an InputError names the first bad key. Unknown keys are request parameters and pass."""
    from pydantic import ValidationError

    if "api_key" in settings:  # it would be sent as a request parameter beside the real key
        raise InputError("a key does not belong in a suite file: name its environment variable with api_key_env",
                         path=path, line=line, field=f"{field}.api_key")
    try:
        _model_settings_schema().model_validate(settings, strict=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise InputError(_EXPECTED.get(error["type"], error["msg"]), path=path, line=line,
                         field=f"{field}.{where}") from None


@functools.lru_cache(maxsize=1)
def _model_settings_schema() -> type:
    from typing import Optional

    from pydantic import BaseModel, ConfigDict, Field

    class SuiteModelSettings(BaseModel):
        model_config = ConfigDict(extra="allow")

        api_base: Optional[str] = None
        api_key_env: Optional[str] = None
        params: dict[str, Any] = {}
        concurrency: Optional[int] = Field(default=None, gt=0)
        rpm: Optional[float] = Field(default=None, gt=0)
        timeout: Optional[float] = Field(default=None, gt=0)
        supports_schema: Optional[bool] = None
        supports_logprobs: Optional[bool] = None
        supports_vision: Optional[bool] = None
        supports_audio_input: Optional[bool] = None
        batch: Optional[bool] = None
        batch_poll_s: Optional[float] = Field(default=None, gt=0)

    return SuiteModelSettings
