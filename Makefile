# The commands the README shows. `make plan` and `make test` are all a fresh machine needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev
E2E_VENV := .venv-e2e
E2E_BIN := $(E2E_VENV)/bin

.PHONY: install policy-pack plan plans test test-pairs lint typecheck bench clean mutation mutation-changed e2e e2e-toolchain e2e-install e2e-bench e2e-fleet-bench e2e-scale sandbox sandbox-down sandbox-plan sandbox-toolchain e2e-plan

# Each target installs what it runs and no more: `pulumi up` needs only requirements.txt (the
# deploy job installs nothing else), the offline plan adds its validators, the tests add the test,
# lint and type-check tools. The stamps make a second run install nothing.
#
# requirements.txt installs this checkout's package, kiam_eks, editable in strict mode: a tree of
# links to each module file (build/__editable__.*). So a module added or removed is seen once the
# package is installed again: PACKAGE_FILES lists them, and is rewritten only when the list changes.
PACKAGE_FILES := build/package-files.txt
$(shell mkdir -p build && find src/kiam_eks components contracts invariants program settings specs \
	-name '*.py' -o -name py.typed | sort > $(PACKAGE_FILES).new && \
	(cmp -s $(PACKAGE_FILES).new $(PACKAGE_FILES) || cp $(PACKAGE_FILES).new $(PACKAGE_FILES)))

$(BIN)/.installed: requirements.txt pyproject.toml $(PACKAGE_FILES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(BIN)/.installed-plan: $(BIN)/.installed requirements-plan.txt
	$(BIN)/python -m pip install --quiet -r requirements-plan.txt
	touch $@

$(BIN)/.installed-dev: $(BIN)/.installed-plan requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(BIN)/.installed  ## Create .venv with what `pulumi up` needs (requirements.txt)

# The policy pack's own virtualenv (PulumiPolicy.yaml): pulumi-policy and the package's guarantees,
# kiam_eks without its dependencies (the guarantees import none of the cloud SDKs).
POLICY_BIN := policy/venv/bin
$(POLICY_BIN)/.installed: policy/requirements.txt pyproject.toml $(PACKAGE_FILES)
	test -x $(POLICY_BIN)/python || $(PYTHON) -m venv policy/venv
	$(POLICY_BIN)/python -m pip install --quiet -r policy/requirements.txt
	$(POLICY_BIN)/python -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict
	touch $@

policy-pack: $(POLICY_BIN)/.installed  ## Create policy/venv, what `--policy-pack policy` runs in

plan: $(BIN)/.installed-plan  ## Plan a stack offline (default: the dev example) into plan/$(STACK)
	$(BIN)/python -m tools.plan --stack $(STACK) --out plan/$(STACK)

plans: $(BIN)/.installed-plan  ## Plan every stack in stacks/ into plan/<stack>; fail if any fails
	set -e; for file in stacks/Pulumi.*.yaml; do \
		stack=$$(basename $$file .yaml); stack=$${stack#Pulumi.}; \
		$(BIN)/python -m tools.plan --stack $$stack --out plan/$$stack; \
	done

test: $(BIN)/.installed-dev  ## Lint, type-check, check the import layers and run every test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n 2 --dist loadfile

lint: $(BIN)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(BIN)/.installed-dev
	$(BIN)/mypy

# Mutation testing of the modules whose lines carry a promise (docs/testing.md): cosmic-ray, from
# requirements-mutation.txt, mutates each in a copy of the work tree under build/mutation and runs
# the tests that cover it; exits 1 on a survivor neither killed nor in tools/mutation/equivalent.toml.
# MODULES limits the full run (paths); BASE is what `mutation-changed` diffs against.
BASE ?= HEAD~1
test-pairs: $(BIN)/.installed-dev  ## Every pair of single changes from every base, judged together and rendered (about half an hour)
	KIAM_PAIRS=all $(BIN)/python -m pytest tests/test_change_pairs.py

$(BIN)/.installed-mutation: $(BIN)/.installed-dev requirements-mutation.txt
	$(BIN)/python -m pip install --quiet -r requirements-mutation.txt
	touch $@

mutation: $(BIN)/.installed-mutation  ## Mutation-test every target module (hours on 2 cores; MODULES=... for some)
	$(BIN)/python -m tools.mutation.run $(MODULES)

mutation-changed: $(BIN)/.installed-mutation  ## Mutation-test the target modules changed since BASE (default HEAD~1)
	$(BIN)/python -m tools.mutation.run --changed $(BASE)

# The real engine and control plane. Each tool comes from this machine where a compatible version
# is installed (on PATH; the Kubernetes provider in Pulumi's plugin cache), the rest is built from
# Go modules into ~/.cache/kiam-eks/e2e (once: about 40 minutes cold on 2 cores for everything,
# seconds when cached). `make sandbox-plan` / `make e2e-plan` say which path each tool takes and
# how long it will take; KIAM_E2E_TOOLCHAIN=source (what CI sets) builds everything from source.
# Only the standard library runs here, so no virtualenv is needed yet.
e2e-toolchain:  ## Find or build the Pulumi CLI, providers and control plane for the e2e suite
	$(PYTHON) -m e2e.harness.toolchain build --for e2e >/dev/null

sandbox-toolchain:
	$(PYTHON) -m e2e.harness.toolchain build --for sandbox >/dev/null

e2e-plan:  ## Which tools this machine has, which would be built, and how long that takes
	$(PYTHON) -m e2e.harness.toolchain --explain --for e2e

sandbox-plan:  ## The same for `make sandbox` (which needs no promtool)
	$(PYTHON) -m e2e.harness.toolchain --explain --for sandbox

# The package without its dependencies: the e2e program runs on stand-ins for AWS and TLS.
$(E2E_BIN)/.installed: e2e/requirements.txt pyproject.toml $(PACKAGE_FILES)
	test -x $(E2E_BIN)/python || $(PYTHON) -m venv $(E2E_VENV)
	$(E2E_BIN)/python -m pip install --quiet --upgrade pip
	$(E2E_BIN)/python -m pip install --quiet -r e2e/requirements.txt
	$(E2E_BIN)/python -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict
	touch $@

e2e-install: e2e-toolchain $(E2E_BIN)/.installed

# Two workers (pytest-xdist), each running whole test modules, longest first (e2e/tests/conftest.py):
# E2E_WORKERS=0 runs the suite in one process.
E2E_WORKERS ?= 2
e2e: e2e-install  ## The real-engine suite: real CLI, provider, control plane (minutes)
	$(E2E_BIN)/python -m pytest e2e/tests -v --durations=15 -n $(E2E_WORKERS) --dist loadfile --no-loadscope-reorder

e2e-bench: e2e-install  ## The dev stack on the real engine against the engine's floor
	$(E2E_BIN)/python -m e2e.bench

e2e-scale: e2e-install  ## The scale scenarios at full size: 100 workload nodes, agents 10 s to start (minutes)
	KIAM_E2E_SCALE=full $(E2E_BIN)/python -m pytest e2e/tests/test_scale.py -v --durations=5

e2e-fleet-bench: e2e-install  ## The fleet scenario, also timing the same previews one CLI run after another
	KIAM_E2E_FLEET_BENCH=1 $(E2E_BIN)/python -m pytest e2e/tests/test_fleet.py -v -s

sandbox: sandbox-toolchain $(E2E_BIN)/.installed  ## A local cluster running a stack: make sandbox STACK=dev (or CONFIG=path; NODES=200 POD_START=10s POD_STOP=2s)
	$(E2E_BIN)/python -m e2e.sandbox up $(if $(CONFIG),--config-file $(CONFIG),--stack $(STACK)) \
		$(if $(NODES),--nodes $(NODES)) $(if $(POD_START),--pod-start $(POD_START)) $(if $(POD_STOP),--pod-stop $(POD_STOP))

sandbox-down:  ## Stop the sandbox and remove its state
	$(E2E_BIN)/python -m e2e.sandbox down

bench: $(BIN)/.installed-plan  ## Time the offline plan against the SDK import floor
	$(BIN)/python -m tools.bench

clean:
	rm -rf $(VENV) $(E2E_VENV) plan build/mutation .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache
