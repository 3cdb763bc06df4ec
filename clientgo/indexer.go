package clientgo

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
)

// indexer is the read-only cache.Indexer of a View. Keys are client-go's:
// "namespace/name", or "name" for cluster-scoped objects.
type indexer[T informers.Object] struct{ v *View[T] }

var _ cache.Indexer = indexer[informers.Object]{}

func (x indexer[T]) readOnly(method string) error {
	return fmt.Errorf("clientgo: %s: %s: the store of an informer view is read-only: the informer keeps it in step with the server", x.v.inf, method)
}

// Add, Update, Delete, Replace and Resync return an error: only the
// informer writes its cache.
func (x indexer[T]) Add(any) error               { return x.readOnly("Add") }
func (x indexer[T]) Update(any) error            { return x.readOnly("Update") }
func (x indexer[T]) Delete(any) error            { return x.readOnly("Delete") }
func (x indexer[T]) Replace([]any, string) error { return x.readOnly("Replace") }
func (x indexer[T]) Resync() error               { return x.readOnly("Resync") }

// Bookmark, which only a reflector feeding the store calls, cannot return
// an error: it logs one.
func (x indexer[T]) Bookmark(string) {
	klog.Background().Error(x.readOnly("Bookmark"), "Ignored")
}

func (x indexer[T]) List() []any {
	out := make([]any, 0, x.v.inf.Lister().Len())
	for obj := range x.v.inf.Lister().All() {
		out = append(out, obj)
	}
	return out
}

func (x indexer[T]) ListKeys() []string {
	out := make([]string, 0, x.v.inf.Lister().Len())
	for obj := range x.v.inf.Lister().All() {
		out = append(out, storeKey(obj.GetNamespace(), obj.GetName()))
	}
	return out
}

func (x indexer[T]) LastStoreSyncResourceVersion() string { return x.v.inf.LastSyncResourceVersion() }

func (x indexer[T]) Get(obj any) (any, bool, error) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return x.GetByKey(key)
}

func (x indexer[T]) GetByKey(key string) (any, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	var obj T
	if ns == "" {
		obj, err = x.v.inf.Lister().Get(name)
	} else {
		obj, err = x.v.inf.Lister().Namespace(ns).Get(name)
	}
	var scope *informers.ScopeError
	switch {
	case err == nil:
		return obj, true, nil
	case apierrors.IsNotFound(err) || errors.As(err, &scope):
		return nil, false, nil
	}
	return nil, false, err
}

// Index returns the objects that share a value of index indexName with
// obj. It needs the index function: indexes added through this View and
// the namespace index.
func (x indexer[T]) Index(indexName string, obj any) ([]any, error) {
	fn, ok := x.v.indexFuncs()[indexName]
	if !ok {
		return nil, fmt.Errorf("clientgo: %s: index %q was not added through this view", x.v.inf, indexName)
	}
	vals, err := fn(obj)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []any
	for _, val := range vals {
		objs, err := x.v.inf.Lister().ByIndex(indexName, val)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if k := storeKey(o.GetNamespace(), o.GetName()); !seen[k] {
				seen[k] = true
				out = append(out, o)
			}
		}
	}
	return out, nil
}

func (x indexer[T]) IndexKeys(indexName, indexedValue string) ([]string, error) {
	objs, err := x.v.inf.Lister().ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(objs))
	for n, o := range objs {
		keys[n] = storeKey(o.GetNamespace(), o.GetName())
	}
	return keys, nil
}

func (x indexer[T]) ListIndexFuncValues(indexName string) []string {
	idx, ok := x.v.inf.Index(indexName)
	if !ok {
		return nil
	}
	return idx.Values()
}

func (x indexer[T]) ByIndex(indexName, indexedValue string) ([]any, error) {
	objs, err := x.v.inf.Lister().ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(objs))
	for n, o := range objs {
		out[n] = o
	}
	return out, nil
}

// GetIndexers returns the indexes added through the View, and the
// namespace index.
func (x indexer[T]) GetIndexers() cache.Indexers { return x.v.indexFuncs() }

func (x indexer[T]) AddIndexers(indexers cache.Indexers) error { return x.v.AddIndexers(indexers) }
