package informers

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informers/internal/apiclient"
)

// NewNamespaceSelectedInformer is NewInformer for an informer with
// Options.NamespaceSelector, for code that makes its own list-watches (an
// adapter) rather than use a Factory. lwFor returns the list-watch of the
// resource in one namespace, or in all of them for "" (the cluster-wide
// watch); namespaces is the Namespace informer the selection follows,
// which the caller runs (one can serve many informers). Everything else
// behaves as in a Factory: see docs/namespaces.md. It fails if opts has
// no NamespaceSelector, sets a namespace, or lwFor fails for "".
func NewNamespaceSelectedInformer[T Object, L List](lwFor func(namespace string) (*ListWatch[T, L], error), namespaces *SharedInformer[*corev1.Namespace], opts Options[T]) (*SharedInformer[T], error) {
	switch {
	case lwFor == nil || namespaces == nil:
		return nil, errorf("NewNamespaceSelectedInformer[%T]: needs list-watches and a Namespace informer", *new(T))
	case opts.NamespaceSelector == "":
		return nil, errorf("NewNamespaceSelectedInformer[%T]: Options.NamespaceSelector is empty: use NewInformer", *new(T))
	case opts.Namespace != "":
		return nil, errorf("NewNamespaceSelectedInformer[%T]: Options.Namespace is for a Factory", *new(T))
	}
	resource := opts.Resource
	if resource.Empty() {
		if gvr, err := apiclient.GuessResource[T](); err == nil {
			resource = gvr
		}
	}
	if resource == namespacesResource {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: NamespaceSelector on an informer of namespaces: use LabelSelector", *new(T))
	}
	c, err := resolveConfig(opts, FactoryOptions{}, resource, "")
	if err != nil {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: %w", *new(T), err)
	}
	lw, err := lwFor("")
	if err != nil {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: list-watch of all namespaces: %w", *new(T), err)
	}
	if lw == nil || lw.ListFunc == nil || lw.WatchFunc == nil {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: ListWatch needs ListFunc and WatchFunc", *new(T))
	}
	inf, err := newInformer(lw, c)
	if err != nil {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: %w", *new(T), err)
	}
	inf.namespaces = newNamespaceScope(c.filter.namespaces, "", namespaces)
	inf.newNamespaceRefl = namespaceReflectors(c, lwFor)
	return inf, nil
}
