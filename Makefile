# The two commands of the README:
#   make demo   run the quickstart controller, on $KUBECONFIG if set, else on
#               a local kube-apiserver and etcd (built from Go modules on first use)
#   make test   run every test with the race detector, the integration tests
#               against a real control plane included
# and, for the supported kube-apiserver versions:
#   make test-skew                          the skew tests against each pinned
#                                           kube-apiserver (docs/testing.md)
#   make test-skew KUBE_VERSIONS="1.34 1.35"
# and, for the newest k8s.io release besides the oldest (see below):
#   make test-k8s-newest
GO ?= go

.PHONY: demo test test-skew test-k8s-newest lint controlplane api

demo:
	cd examples/quickstart && $(GO) run . -duration=30s -metrics-addr=127.0.0.1:0

# MODULES are the Go modules that `make test` vets and tests: the library
# and every adapter module beside it (each has its own go.mod). The tools
# module only pins commands.
MODULES := $(sort $(patsubst %/go.mod,%,$(shell find . -name go.mod -not -path './internal/tools/*')))

# controllerruntime/upstreamtest builds and runs controller-runtime's cache
# suite once per supported release: it gets an hour.
test: lint controlplane
	@set -e; for m in $(MODULES); do \
		echo "== go test $$m"; \
		timeout=30m; case $$m in ./controllerruntime/upstreamtest) timeout=60m;; esac; \
		(cd $$m && $(GO) test -race -count=1 -timeout $$timeout ./...); \
	done

# The library supports two k8s.io releases, each with the controller-runtime
# release built on it. The oldest is what every go.mod requires: `make test`
# tests it. The newest, K8S_NEWEST with CONTROLLER_RUNTIME_NEWEST, is what
# `make test-k8s-newest` tests, in a copy of the repository whose modules
# require it (internal/tools/k8s-newest.sh; the repository's go.mod files
# stay as they are), with the build tag K8S_NEWEST_TAGS, behind which are
# the tests and benchmarks of what only the newest release has. It vets and
# tests every module but internal/moduletest (whose subject is the go.mod
# minimums), integration tests included, without the race detector, which
# `make test` has run on the same code: NEWEST_TESTFLAGS=-race adds it.
K8S_NEWEST                ?= v0.37.2
CONTROLLER_RUNTIME_NEWEST ?= v0.25.3
K8S_NEWEST_TAGS           ?= k8s_v0_37
NEWEST_TESTFLAGS          ?=
NEWEST_MODULES := $(filter-out ./internal/moduletest ./controllerruntime/upstreamtest,$(MODULES))

test-k8s-newest: controlplane
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	GO=$(GO) internal/tools/k8s-newest.sh "$$dir" $(K8S_NEWEST) $(CONTROLLER_RUNTIME_NEWEST); \
	for m in $(NEWEST_MODULES); do \
		echo "== go test, k8s.io $(K8S_NEWEST), controller-runtime $(CONTROLLER_RUNTIME_NEWEST): $$m"; \
		(cd "$$dir/$$m" && export GOWORK=off && \
			$(GO) vet -tags $(K8S_NEWEST_TAGS) ./... && \
			$(GO) test -tags $(K8S_NEWEST_TAGS) $(NEWEST_TESTFLAGS) -count=1 -timeout 30m ./...); \
	done

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

# Rewrites the record of the public API in api/ (see docs/testing.md);
# TestAPIRecord, part of `make test`, fails while it is stale.
api:
	$(GO) run ./internal/cmd/apirecord -w

# Builds kube-apiserver and etcd ahead of the tests, with visible progress:
# five to ten minutes on two cores the first time, nothing afterwards.
controlplane:
	$(GO) run ./internal/testenv/cmd/controlplane build

# KUBE_VERSIONS are the kube-apiserver versions that test-skew runs
# against: every pinned one (internal/testenv/controlplane*.mod) unless
# given.
KUBE_VERSIONS ?= $(shell $(GO) run ./internal/testenv/cmd/controlplane versions)

# SKEW_TESTS are the tests that test-skew runs against each version: the
# test env's own, and the integration tests of list and watch, watch-list
# and its fallbacks, sharding (filtered by the server where it has the
# ShardedListAndWatch gate, by the client where it has not), namespace
# selection, views, custom resources, poison objects, and the fault
# matrix's smaller cut: every combination through watch-410,
# apiserver-kill and compaction (SKEW_SKIP leaves out its other faults).
SKEW_TESTS ?= ^(TestCreateAndListPod|TestServer|TestFeatureGates|TestWatchListServedByDefault|TestCompact|TestRestartAPIServer|TestSyncAndFollow|TestListAndWatchWhenWatchListIsOff|TestWatchListIsUsed|TestFallbackWhenServerRefusesWatchList|TestDisableWatchListLists|TestShardHashMatchesServer|TestShardsServerFiltered|TestShardsClientFiltered|TestMembershipTakeover|TestNamespaceSelectorFollowsLabels|TestNamespaceSelectorPerNamespaceRoles|TestViewInformer|TestViewOfCustomResource|TestCustomResource|TestCRDDeletedAndInstalledAgain|TestPoisonObject|TestCBORCachedAsJSON|TestFaultMatrix)$$
SKEW_SKIP  ?= ^TestFaultMatrix$$/^watchcache$$/^(closed-watch|failing-list|throttling)$$

# Runs SKEW_TESTS against each of KUBE_VERSIONS in turn, building each
# kube-apiserver first (five to ten minutes on two cores the first time), and
# reports the time of each build and each run.
test-skew:
	@set -e; for v in $(KUBE_VERSIONS); do \
		echo "== kube-apiserver $$v"; \
		start=$$(date +%s); \
		INFORMERS_KUBE_VERSION=$$v $(GO) run ./internal/testenv/cmd/controlplane build; \
		built=$$(date +%s); \
		INFORMERS_KUBE_VERSION=$$v $(GO) test -race -count=1 -timeout 30m \
			-run '$(SKEW_TESTS)' -skip '$(SKEW_SKIP)' ./internal/testenv/ ./internal/integration/; \
		echo "== kube-apiserver $$v: build $$((built - start)) s, tests $$(($$(date +%s) - built)) s"; \
	done

-include bench.mk
