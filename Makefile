# The two commands a new user needs: `make run` and `make test`. Everything else supports them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
NPM_STAMP := node_modules/.install-stamp
# One Node.js LTS line everywhere (images, CI, make run): the machine's own when it is that line,
# else the npm registry's official build, installed once into .tools/ (scripts/node-lts.sh).
NODE_BIN := $(shell bash scripts/node-lts.sh)
ifeq ($(NODE_BIN),)
$(error could not find or install the project's Node.js (scripts/node-lts.sh))
endif
export PATH := $(NODE_BIN):$(PATH)
BUF := npx --no-install buf

.PHONY: help install build infra run test test-unit test-integration test-e2e typecheck lint format format-check proto proto-check contracts-check changeset-shipped rules rules-check dashboards release charts-check images cluster-test bench sdk clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(NPM_STAMP): scripts/node-lts.sh package.json package-lock.json */package.json libs/*/package.json services/*/package.json sdk/*/package.json proto/gen/package.json deploy/local/package.json
	@echo "==> installing npm dependencies (from package-lock.json)…"
	@# npm install, not npm ci: npm 11 leaves other platforms' optional binaries (buf, swc) out of
	@# the lock file and then refuses `npm ci`; install still honours every locked version.
	npm install --no-audit --no-fund
	@touch $@

install: $(NPM_STAMP) ## install npm dependencies

build: $(NPM_STAMP) ## compile every TypeScript project (tsc -b, strict)
	@echo "==> compiling TypeScript (tsc -b)…"
	npx --no-install tsc -b

infra: build ## build the embedded store (once per machine, ~6 min) and resolve Kafka for local runs
	bash deploy/local/install.sh

run: infra ## start everything locally and print how to call it (Ctrl-C stops)
	node deploy/local/dist/run.js

typecheck: build ## type-check the tests too
	npx --no-install tsc -p test/tsconfig.json

lint: build ## type-aware lint of every TypeScript file (eslint + typescript-eslint, eslint.config.mjs) and ShellCheck over every shell script git tracks (scripts/shellcheck.sh)
	bash scripts/shellcheck.sh
	npx --no-install eslint --max-warnings 0 .

format: $(NPM_STAMP) ## rewrite every file in the project's format (prettier, .prettierrc)
	npx --no-install prettier --write --log-level warn .

format-check: $(NPM_STAMP) ## fail when a file is not in the project's format (`make format` fixes it)
	npx --no-install prettier --check --log-level warn .

proto: $(NPM_STAMP) ## regenerate TypeScript from proto/ (ts-proto), then the gRPC callees list from services/manifest.json
	cd proto && $(BUF) generate
	node --import tsx tools/grpc-callees.ts

proto-check: $(NPM_STAMP) ## buf lint and generated-code drift (breaking changes: make contracts-check)
	cd proto && $(BUF) lint
	@tmp=$$(mktemp -d); cd proto && $(BUF) generate -o $$tmp && node --import tsx ../tools/grpc-callees.ts --out $$tmp/gen/src && \
	  if diff -r $$tmp/gen/src gen/src >/dev/null; then echo "generated code is up to date"; \
	  else echo "proto/gen is stale: run 'make proto' and commit" >&2; diff -r $$tmp/gen/src gen/src | head -20 >&2; exit 1; fi

contracts-check: build ## today's contracts against the last recorded release: protobuf (buf), the tenant API (oasdiff), chart values; each check's canary must fail it
	python3 scripts/values-compat.test.py
	node --import tsx tools/contracts.ts

rules: $(NPM_STAMP) ## regenerate the SLO recording rules and burn-rate alerts from observability/slos.yaml (Sloth) into charts/platform/files/prometheus/
	node --import tsx tools/observability.ts generate

dashboards: $(NPM_STAMP) ## regenerate the Grafana dashboards (tools/dashboards.ts) into charts/platform/files/dashboards/
	node --import tsx tools/dashboards.ts

rules-check: build ## the SLO rules are what Sloth makes of observability/slos.yaml; promtool check rules and test rules (observability/tests/): every alert fires on its failure and stays quiet when healthy
	node --import tsx tools/observability.ts check

release: build contracts-check ## release the deployables named by pending changesets (npx changeset): versions, changelogs (tenants' notes too), charts, contracts, each released image and chart package built from the release commit, record (two commits; RELEASE_IMAGES=0: no images, a dry run in a scratch clone only)
	node --import tsx tools/release.ts

changeset-shipped: build ## a patch changeset for every deployable whose shipped content changed since its release without one (SUMMARY="…")
	node --import tsx tools/contracts.ts changeset-shipped "$${SUMMARY:-}"

test-unit: build ## unit specs beside the code
	npx --no-install jest --selectProjects unit

test-integration: typecheck infra ## integration tests per service (real MongoDB-compatible server and Kafka)
	npx --no-install jest --selectProjects integration --runInBand

test-e2e: typecheck infra ## end-to-end, fault and API-fuzz tests through the gateway with real processes
	bash scripts/install-schemathesis.sh
	bash scripts/install-chromium.sh
	npx --no-install jest --selectProjects e2e --runInBand

test: typecheck lint format-check proto-check contracts-check rules-check infra ## every test level against real servers, and the chart checks (what CI runs)
	bash scripts/install-schemathesis.sh
	bash scripts/install-chromium.sh
	npx --no-install jest --selectProjects unit integration e2e --runInBand
	bash scripts/chart-checks.sh

sdk: build ## regenerate the TypeScript SDK's copy of the OpenAPI document and its types from the gateway's routes (sdk/typescript)
	node --import tsx tools/sdk-generate.ts

charts-check: $(NPM_STAMP) ## helm lint, render and validate every chart offline
	bash scripts/chart-checks.sh

images: ## every process's image from deploy/images/Dockerfile with podman, no Docker or registry needed (IMAGE_TAG, IMAGES)
	bash scripts/images.sh

cluster-test: typecheck infra ## the charts on a live two-node Kubernetes cluster: install, a tenant's flow, a release, pod loss and a drain under load, budgets, helm test, uninstall (root)
	bash scripts/cluster-test.sh

bench: infra ## store candidates, an idle system, gateway edge cost, billing throughput, lead ingest, batch ingest on the whole system, the call feed and the dialler, the live call stream, uploads and the custom API, recordings in object storage (before and after), webhook deliveries, the store's cost per operation, the whole system as a tenant meets it (CPU per operation of every process), then every target met or not in one table; writes docs/performance.md
	node --import tsx test/bench/stores.ts
	node --import tsx test/bench/idle.ts
	node --import tsx test/bench/edge.ts
	node --import tsx test/bench/billing.ts
	node --import tsx test/bench/leads.ts
	node --import tsx test/bench/batch.ts
	node --import tsx test/bench/telephony.ts
	node --import tsx test/bench/stream.ts
	node --import tsx test/bench/agents.ts
	node --import tsx test/bench/recordings.ts
	node --import tsx test/bench/webhooks.ts
	node --import tsx test/bench/store-cost.ts
	node --import tsx test/bench/whole-system.ts
	node --import tsx test/bench/targets.ts

clean: ## remove build output (keeps .data and downloaded infra)
	npx --no-install tsc -b --clean || true
