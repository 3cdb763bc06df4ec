# The two commands of the README:
#   make demo   run the quickstart controller, on $KUBECONFIG if set, else on
#               a local kube-apiserver and etcd (built from Go modules on first use)
#   make test   run every test with the race detector, the integration tests
#               against a real control plane included
GO ?= go

.PHONY: demo test lint controlplane api

demo:
	cd examples/quickstart && $(GO) run . -duration=30s -metrics-addr=127.0.0.1:0

# MODULES are the Go modules that `make test` vets and tests: the library
# and every adapter module beside it (each has its own go.mod). The tools
# module only pins commands.
MODULES := $(sort $(patsubst %/go.mod,%,$(shell find . -name go.mod -not -path './internal/tools/*')))

test: lint controlplane
	@set -e; for m in $(MODULES); do \
		echo "== go test $$m"; \
		(cd $$m && $(GO) test -race -count=1 -timeout 30m ./...); \
	done

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

# Rewrites the record of the public API in api/ (see docs/testing.md);
# TestAPIRecord, part of `make test`, fails while it is stale.
api:
	$(GO) run ./internal/cmd/apirecord -w

# Builds kube-apiserver and etcd ahead of the tests, with visible progress:
# about ten minutes on two cores the first time, nothing afterwards.
controlplane:
	$(GO) run ./internal/testenv/cmd/controlplane build

-include bench.mk
