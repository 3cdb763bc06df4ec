// Package upstreamtest runs controller-runtime's own pkg/cache test suite
// against the adapter's NewCache, on the test control plane.
//
// The suite is not copied into the repository: at test time the runner
// reads it from the module cache of each controller-runtime release the
// adapter supports, copies its external test files into a scratch module
// that pins that release and the k8s.io release it goes with, replaces
// every cache.New of the suite by the adapter's controllerruntime.NewCache,
// and runs it with go test on envtest, whose KUBEBUILDER_ASSETS directory
// holds the kube-apiserver and etcd that internal/testenv builds. A new
// release therefore brings its new specs with it.
//
// The specs and tests the adapter fails by design are listed, each with
// its reason, in pinned_test.go. The run fails when any other spec or test
// fails, when a listed one passes, when the number of specs run differs
// from the suite's own count, or when the suite ran with a focus, a skip
// or a label filter. See docs/testing.md.
//
// It is a module of its own so that ginkgo stays out of the adapter's
// go.mod; the scratch module takes ginkgo, gomega and envtest from
// controller-runtime's own requirements.
package upstreamtest
