// Module moduletest checks, in CI, that a user outside the repository can
// install the library and its adapter modules as the README says; it keeps
// golang.org/x/mod, which builds the module proxy for that, out of the
// library's own go.mod.
module github.com/kubetyped/informers/internal/moduletest

go 1.26.8

require golang.org/x/mod v0.43.0
