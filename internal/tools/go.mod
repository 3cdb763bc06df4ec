// Module tools pins the command-line tools that the benchmarks use
// (benchstat, run by `make bench`), so that the library's own go.mod does
// not carry them. Run one with `go tool -modfile=internal/tools/go.mod NAME`
// from the repository root, or `go tool NAME` from this directory.
module github.com/kubetyped/informers/internal/tools

go 1.26.8

tool golang.org/x/perf/cmd/benchstat

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
)
