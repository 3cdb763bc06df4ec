package informers

import (
	"fmt"
)

// NamespaceMode says how an informer with a NamespaceSelector watches its
// resource; see docs/namespaces.md.
type NamespaceMode int

const (
	// NamespaceModeAuto, the zero value, chooses when the informer starts,
	// once it knows the namespaces: one watch per selected namespace if
	// they are at most a quarter of all namespaces (autoPerNamespaceShare),
	// or if the informer has a namespace of its own; otherwise one
	// cluster-wide watch, until the server refuses its list with 403
	// Forbidden, when the informer turns to a watch per namespace for
	// good. A sharded informer always watches cluster-wide.
	NamespaceModeAuto NamespaceMode = iota
	// NamespaceModePerNamespace lists and watches each selected namespace
	// on its own, starting and stopping its watch as the namespace enters
	// and leaves the selection: it needs the right to read the resource
	// in the selected namespaces only (a Role in each), and what the
	// server sends scales with the selection. It does not combine with
	// Options.Shard.
	NamespaceModePerNamespace
	// NamespaceModeClusterWide watches the resource in every namespace
	// and keeps the objects of the selected ones: one connection, but the
	// server sends, and the client decodes, the objects of every
	// namespace.
	NamespaceModeClusterWide
)

// autoPerNamespaceShare is the largest share of all namespaces that
// NamespaceModeAuto watches one by one: selecting at most one namespace
// in autoPerNamespaceShare.
const autoPerNamespaceShare = 4

// String names the mode as its constant does, without the prefix.
func (m NamespaceMode) String() string {
	switch m {
	case NamespaceModeAuto:
		return "Auto"
	case NamespaceModePerNamespace:
		return "PerNamespace"
	case NamespaceModeClusterWide:
		return "ClusterWide"
	}
	return fmt.Sprintf("NamespaceMode(%d)", int(m))
}

// autoMode returns the mode NamespaceModeAuto chooses for an informer
// selecting selected of all namespaces.
func autoMode(selected, all int, only, sharded bool) NamespaceMode {
	switch {
	case sharded:
		return NamespaceModeClusterWide
	case only, selected*autoPerNamespaceShare <= all:
		return NamespaceModePerNamespace
	}
	return NamespaceModeClusterWide
}
