"""The prompt library: lookup order, front matter, errors with file:line, rendering."""

from __future__ import annotations

import pytest

from evalyard import InputError, UnknownNameError
from evalyard.prompting import PromptLibrary, parse_template, starter_text

CASE = {"id": "c1", "input": "What is 2+2?", "candidate": "4", "reference": "four", "context": ["p1", "p2"]}


def write(directory, name, text):
    path = directory / f"{name}.jinja"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


GOOD = "---\ndescription: mine\nfields: [candidate]\nanswer: binary\n---\nIs {{ candidate }} fine?\n"


def test_builtins_load_and_render():
    library = PromptLibrary()
    names = library.names()
    assert {"correctness", "faithfulness", "relevance", "criterion", "helpfulness", "claim_support"} <= set(names)
    for template in library.list():
        assert template.source == "built-in" and template.overrides == []
        rendered = template.render(CASE, structured=template.answer.kind == "json")
        assert rendered.messages[-1]["role"] == "user"


def test_user_dir_overrides_plugin_which_overrides_builtin(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    write(first, "correctness", GOOD.replace("mine", "first"))
    write(second, "correctness", GOOD.replace("mine", "second"))
    library = PromptLibrary([first, second])
    library.add_plugin_template("correctness", GOOD.replace("mine", "plugin"), plugin="judge")
    template = library.get("correctness")
    assert template.description == "first" and template.origin == str(first / "correctness.jinja")
    assert template.overrides == [str(second / "correctness.jinja"), "plugin judge", "built-in"]
    assert "Is <data-" in template.render(CASE).messages[-1]["content"]
    plugin_only = PromptLibrary()
    plugin_only.add_plugin_template("correctness", GOOD.replace("mine", "plugin"), plugin="judge")
    assert plugin_only.get("correctness").origin == "plugin judge"


def test_subdirectories_give_namespaced_names(tmp_path):
    write(tmp_path, "team/tone", GOOD)
    assert PromptLibrary([tmp_path]).get("team/tone").name == "team/tone"


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="no prompt template named 'nope'.*correctness"):
        PromptLibrary().get("nope")


@pytest.mark.parametrize("text, message, line", [
    ("no header\n", "starts with a front-matter header", 1),
    ("---\nfields: [candidate]\nanswer: binary\n", "not closed", 1),
    ("---\nfields: [candidate\nanswer: binary\n---\nx\n", "not valid YAML", None),
    ("---\nfields: [candidate]\nanswer: binary\ncolour: red\n---\nx\n", "unknown front-matter key 'colour'", 4),
    ("---\nfields: [candidate, mood]\nanswer: binary\n---\nx\n", "unknown case field 'mood'", 2),
    ("---\nfields: [candidate]\nanswer: {type: score, range: [5, 1]}\n---\nx\n", "range", 3),
    ("---\nfields: [candidate]\nscorer: true\n---\nx\n", "needs `answer:`", 3),
    ("---\nfields: [candidate]\nanswer: binary\n---\nline one\n{% if candidate %}\nno end\n", "syntax error", None),
    ("---\nfields: [candidate]\nanswer: binary\n---\nfine\n{{ candidate }} and {{ reference }}\n",
     "uses 'reference', which the header does not declare", 6),
    ("---\nfields: [candidate]\nanswer: binary\n---\n{{ mood }}\n", "uses 'mood'", 5),
])
def test_bad_templates_name_file_and_line(tmp_path, text, message, line):
    path = write(tmp_path, "bad", text)
    with pytest.raises(InputError, match=message) as info:
        PromptLibrary([tmp_path]).get("bad")
    error = str(info.value)
    assert error.startswith(str(path)) and "\n" not in error
    if line is not None:
        assert error.startswith(f"{path}:{line}:")
    else:
        assert info.value.line is not None


def test_syntax_error_points_at_the_body_line(tmp_path):
    path = write(tmp_path, "bad", "---\nfields: [candidate]\nanswer: binary\n---\nok\n{{ candidate }\n")
    with pytest.raises(InputError) as info:
        PromptLibrary([tmp_path]).get("bad")
    assert str(info.value).startswith(f"{path}:6:")


def test_rendering_is_sandboxed_and_strict():
    template = parse_template("---\nfields: [candidate]\nanswer: binary\n---\n"
                              "{{ candidate.__class__.__mro__ }}\n", name="t")
    with pytest.raises(InputError, match="cannot render"):
        template.render(CASE)
    strict = parse_template("---\nfields: [metadata]\nanswer: binary\n---\n{{ metadata.missing }}\n", name="t")
    with pytest.raises(InputError, match="cannot render.*missing"):
        strict.render({**CASE, "metadata": {"other": 1}})


def test_missing_case_field_is_an_input_error():
    template = PromptLibrary().get("correctness")
    with pytest.raises(InputError, match="case 'c1' has no 'reference'"):
        template.render({**CASE, "reference": None})


def test_variables_are_author_text_and_not_wrapped():
    template = PromptLibrary().get("criterion")
    content = template.render(CASE, variables={"criterion": "Is it polite?"}).messages[-1]["content"]
    assert "against this criterion: Is it polite?" in content


def test_same_case_renders_the_same_prompt_so_the_cache_works():
    template = PromptLibrary().get("correctness")
    assert template.render(CASE).messages == template.render(dict(CASE)).messages
    assert template.render(CASE).nonce != template.render({**CASE, "candidate": "5"}).nonce


@pytest.mark.parametrize("answer", ["binary", "score", "choice", "json"])
def test_starter_templates_parse(answer):
    template = parse_template(starter_text("mine", answer), name="mine")
    assert template.answer.kind == answer and template.scorer == {}
