package informers

import (
	corev1 "k8s.io/api/core/v1"
)

// NewNamespaceSelectedInformer is NewInformer for an informer with
// Tuning.NamespaceSelector, for code that makes its own list-watches (an
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
	case opts.NamespaceSelector.value == "":
		return nil, errorf("NewNamespaceSelectedInformer[%T]: Options.NamespaceSelector is empty: use NewInformer", *new(T))
	case opts.Namespace.set:
		return nil, errorf("NewNamespaceSelectedInformer[%T]: Options.Namespace is for a Factory", *new(T))
	}
	resource := guessResource[T](opts.Resource)
	if resource == namespacesResource {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: NamespaceSelector on an informer of namespaces: use LabelSelector", *new(T))
	}
	c, err := resolveConfig(opts, FactoryOptions{}, resource)
	if err != nil {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: %w", *new(T), err)
	}
	refls, err := newReflectors(c, lwFor)
	if err != nil {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: %w", *new(T), err)
	}
	inf, err := newInformer(c, refls, newScope(c, namespaces))
	if err != nil {
		return nil, errorf("NewNamespaceSelectedInformer[%T]: %w", *new(T), err)
	}
	return inf, nil
}

// NamespaceMode returns how an informer with a NamespaceSelector watches:
// NamespaceModePerNamespace or NamespaceModeClusterWide once it has
// started and chosen, and NamespaceModeAuto before (or without a
// NamespaceSelector).
func (i *SharedInformer[T]) NamespaceMode() NamespaceMode { return i.scope.report().mode }
