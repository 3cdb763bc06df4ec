// Package integration tests the informers against a real kube-apiserver and
// etcd (see internal/testenv): large syncs, watch-list streaming, relists
// after 410, restarts of either server, RBAC failures, custom resources and
// protobuf on the wire. It has no code of its own; `go test` runs it with
// the rest of the module, and under CI=true its tests never skip.
package integration
