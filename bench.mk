# Side-by-side benchmarks with client-go (bench_test.go), included by the
# Makefile. `make bench` runs them against the newest k8s.io release the
# library supports, K8S_NEWEST (v0.37.2), in a copy of the repository that
# requires it, with the K8S_NEWEST_TAGS tag that the clientgo-typed
# implementation needs (see test-k8s-newest in the Makefile); it
# summarizes them with benchstat (pinned in internal/tools/go.mod) and draws
# benchmarks.svg; see BENCHMARKS.md. About 35 minutes on 2 cores at the
# default count.
#
#   make bench                          # everything, 5 runs each
#   make bench BENCH=Update BENCH_COUNT=2
#   INFORMERS_E2E_BENCH=1 make bench BENCH=EndToEnd   # real apiserver
#   INFORMERS_BENCH_1M=1 make bench BENCH='InitialSync/pods=1000000/fixture=server/path=.*/impl=informers' BENCH_COUNT=1
#   INFORMERS_BENCH_1M=1 make bench BENCH='Query/pods=1000000/' BENCH_COUNT=1
#                                     # 1M pods: about 10 and 15 GB of memory

BENCH       ?= .
BENCH_COUNT ?= 5
BENCH_OUT   ?= bench.txt
BENCH_STAT  ?= benchstat.txt
BENCH_SVG   ?= benchmarks.svg
BENCH_IMPLS ?= clientgo clientgo-typed clientgo-strip clientgo-watchlist informers informers-iter informers-strip informers-skip informers-nodecoder informers-list informers-view informers-view-empty floor wire-floor

.PHONY: bench
bench:
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	GO=$(GO) internal/tools/k8s-newest.sh "$$dir" $(K8S_NEWEST) $(CONTROLLER_RUNTIME_NEWEST) >&2; \
	cd "$$dir" && GOWORK=off $(GO) test -tags $(K8S_NEWEST_TAGS) -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCH_COUNT) -timeout 60m . 2>&1 | tee $(abspath $(BENCH_OUT))
	@grep -q '^ok[[:space:]]' $(BENCH_OUT) || { echo "bench: go test failed, see $(BENCH_OUT)" >&2; exit 1; }
	go tool -modfile=internal/tools/go.mod benchstat -col '/impl@($(BENCH_IMPLS))' $(BENCH_OUT) | tee $(BENCH_STAT)
	go run ./internal/cmd/benchchart -in $(BENCH_OUT) -out $(BENCH_SVG)
