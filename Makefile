# The commands the README shows. `make plan` and `make test` are all a fresh machine needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev

.PHONY: install plan plans test lint typecheck bench clean

$(BIN)/.installed: requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

install: $(BIN)/.installed  ## Create .venv with the program's and the tools' dependencies

plan: $(BIN)/.installed  ## Plan a stack offline (default: the dev example) into plan/$(STACK)
	$(BIN)/python -m tools.plan --stack $(STACK) --out plan/$(STACK)

plans: $(BIN)/.installed  ## Plan every stack in stacks/ into plan/<stack>; fail if any fails
	set -e; for file in stacks/Pulumi.*.yaml; do \
		stack=$$(basename $$file .yaml); stack=$${stack#Pulumi.}; \
		$(BIN)/python -m tools.plan --stack $$stack --out plan/$$stack; \
	done

test: $(BIN)/.installed  ## Lint, type-check and run every test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed
	$(BIN)/mypy

bench: $(BIN)/.installed  ## Time the offline plan against the SDK import floor
	$(BIN)/python -m tools.bench

clean:
	rm -rf $(VENV) plan .pytest_cache .mypy_cache .ruff_cache .hypothesis
