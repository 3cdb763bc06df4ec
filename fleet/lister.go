package fleet

import (
	"iter"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubetyped/informers"
)

// Key names an object of a fleet: its cluster, namespace and name.
type Key struct {
	Cluster, Namespace, Name string
}

// String spells the key "cluster|namespace/name", or "cluster|name" for a
// cluster-scoped object.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Cluster + "|" + k.Name
	}
	return k.Cluster + "|" + k.Namespace + "/" + k.Name
}

// KeyOf returns the key of obj, cached by the cluster called cluster.
func KeyOf[T informers.Object](cluster string, obj T) Key {
	return Key{Cluster: cluster, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Lister reads a fleet informer's caches, every cluster's at once or one
// cluster's through Cluster. Objects are shared with the caches: treat
// them as read-only. Get it from SharedInformer.Lister.
type Lister[T informers.Object] struct {
	inf *SharedInformer[T]
}

// Cluster returns the lister of the cluster called name, and whether it
// is attached.
func (l Lister[T]) Cluster(name string) (informers.Lister[T], bool) {
	inf, ok := l.inf.Cluster(name)
	if !ok {
		return informers.Lister[T]{}, false
	}
	return inf.Lister(), true
}

// All iterates over every cached object of every cluster, with its
// cluster's name, cluster by cluster in the order of their names.
func (l Lister[T]) All() iter.Seq2[string, T] {
	return l.each(func(inf *informers.SharedInformer[T]) iter.Seq[T] { return inf.Lister().All() })
}

// Select iterates over the objects of every cluster whose labels match
// sel, with their cluster's name.
func (l Lister[T]) Select(sel labels.Selector) iter.Seq2[string, T] {
	return l.each(func(inf *informers.SharedInformer[T]) iter.Seq[T] { return inf.Lister().Select(sel) })
}

// List returns the objects of every cluster whose labels match sel; nil
// matches everything. Use All or Select to know each one's cluster.
func (l Lister[T]) List(sel labels.Selector) []T {
	var objs []T
	for _, c := range l.inf.each() {
		objs = append(objs, c.inf.Lister().List(sel)...)
	}
	return objs
}

// Get returns the object that key names, or a NotFound error that names
// the resource, as the one-cluster lister's does, also when its cluster is
// not attached: then the error names the whole key, as in
// `pods "east|shop/web-0" not found`.
func (l Lister[T]) Get(key Key) (T, error) {
	inf, ok := l.inf.Cluster(key.Cluster)
	if !ok {
		var zero T
		return zero, apierrors.NewNotFound(l.inf.resource, key.String())
	}
	if key.Namespace == "" {
		return inf.Lister().Get(key.Name)
	}
	return inf.Lister().Namespace(key.Namespace).Get(key.Name)
}

// Len returns the number of objects cached over all clusters.
func (l Lister[T]) Len() int {
	n := 0
	for _, c := range l.inf.each() {
		n += c.inf.Lister().Len()
	}
	return n
}

// Namespace iterates over the objects of namespace ns of every cluster,
// with their cluster's name.
func (l Lister[T]) Namespace(ns string) iter.Seq2[string, T] {
	return l.each(func(inf *informers.SharedInformer[T]) iter.Seq[T] { return inf.Lister().Namespace(ns).All() })
}

// each iterates over objs of every cluster's informer.
func (l Lister[T]) each(objs func(*informers.SharedInformer[T]) iter.Seq[T]) iter.Seq2[string, T] {
	return func(yield func(string, T) bool) {
		for _, c := range l.inf.each() {
			for obj := range objs(c.inf) {
				if !yield(c.cluster, obj) {
					return
				}
			}
		}
	}
}

// Index is a named index over a fleet informer's caches: each cluster's
// index of that name, read together. Get it from SharedInformer.AddIndex.
type Index[T informers.Object] struct {
	inf  *SharedInformer[T]
	name string
}

// Name returns the index's name.
func (x *Index[T]) Name() string { return x.name }

// All iterates over the objects filed under value in every cluster, with
// their cluster's name.
func (x *Index[T]) All(value string) iter.Seq2[string, T] {
	return Lister[T]{x.inf}.each(func(inf *informers.SharedInformer[T]) iter.Seq[T] {
		if idx, ok := inf.Index(x.name); ok {
			return idx.All(value)
		}
		return func(func(T) bool) {}
	})
}

// List returns the objects filed under value in every cluster.
func (x *Index[T]) List(value string) []T {
	var objs []T
	for _, obj := range x.All(value) {
		objs = append(objs, obj)
	}
	return objs
}

// Values returns the values that have at least one object in some
// cluster, sorted.
func (x *Index[T]) Values() []string {
	var vals []string
	for _, c := range x.inf.each() {
		if idx, ok := c.inf.Index(x.name); ok {
			vals = append(vals, idx.Values()...)
		}
	}
	slices.Sort(vals)
	return slices.Compact(vals)
}

// Cluster returns the index of the cluster called name, and whether that
// cluster is attached and has the index.
func (x *Index[T]) Cluster(name string) (*informers.Index[T], bool) {
	inf, ok := x.inf.Cluster(name)
	if !ok {
		return nil, false
	}
	return inf.Index(x.name)
}
