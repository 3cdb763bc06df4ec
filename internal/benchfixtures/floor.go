package benchfixtures

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Floor is the least a pod cache can do: a map by key and maps by
// namespace and by node, under one mutex. The benchmarks use it as the
// lower bound of what an informer costs.
type Floor struct {
	mu     sync.RWMutex
	byKey  map[types.NamespacedName]*corev1.Pod
	byNS   map[string]map[types.NamespacedName]*corev1.Pod
	byNode map[string]map[types.NamespacedName]*corev1.Pod // nil unless indexing nodes
}

// NewFloor returns an empty floor cache; with indexNodes it also keeps an
// index by spec.nodeName.
func NewFloor(indexNodes bool) *Floor {
	f := &Floor{
		byKey: make(map[types.NamespacedName]*corev1.Pod),
		byNS:  make(map[string]map[types.NamespacedName]*corev1.Pod),
	}
	if indexNodes {
		f.byNode = make(map[string]map[types.NamespacedName]*corev1.Pod)
	}
	return f
}

// Put stores p and returns the pod of the same key it replaced, or nil.
func (f *Floor) Put(p *corev1.Pod) (old *corev1.Pod) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	f.mu.Lock()
	old = f.byKey[key]
	f.byKey[key] = p
	addTo(f.byNS, p.Namespace, key, p)
	if f.byNode != nil {
		if old != nil && old.Spec.NodeName != p.Spec.NodeName {
			delete(f.byNode[old.Spec.NodeName], key)
		}
		addTo(f.byNode, p.Spec.NodeName, key, p)
	}
	f.mu.Unlock()
	return old
}

// Delete removes the pod of p's key and returns it, or nil.
func (f *Floor) Delete(p *corev1.Pod) (old *corev1.Pod) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	f.mu.Lock()
	defer f.mu.Unlock()
	old = f.byKey[key]
	if old == nil {
		return nil
	}
	delete(f.byKey, key)
	delete(f.byNS[old.Namespace], key)
	if f.byNode != nil {
		delete(f.byNode[old.Spec.NodeName], key)
	}
	return old
}

// PutList stores every item of l.
func (f *Floor) PutList(l *corev1.PodList) {
	for i := range l.Items {
		f.Put(&l.Items[i])
	}
}

func addTo(m map[string]map[types.NamespacedName]*corev1.Pod, value string, key types.NamespacedName, p *corev1.Pod) {
	b := m[value]
	if b == nil {
		b = make(map[types.NamespacedName]*corev1.Pod)
		m[value] = b
	}
	b[key] = p
}

// Get returns the pod of a key.
func (f *Floor) Get(ns, name string) (*corev1.Pod, bool) {
	f.mu.RLock()
	p, ok := f.byKey[types.NamespacedName{Namespace: ns, Name: name}]
	f.mu.RUnlock()
	return p, ok
}

// Len returns the number of pods.
func (f *Floor) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.byKey)
}

// EachInNamespace calls fn for every pod of namespace ns, holding the read
// lock.
func (f *Floor) EachInNamespace(ns string, fn func(*corev1.Pod)) {
	f.mu.RLock()
	for _, p := range f.byNS[ns] {
		fn(p)
	}
	f.mu.RUnlock()
}

// ListNamespace returns the pods of namespace ns.
func (f *Floor) ListNamespace(ns string) []*corev1.Pod {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return collect(f.byNS[ns])
}

// ListNode returns the pods of node; the floor must index nodes.
func (f *Floor) ListNode(node string) []*corev1.Pod {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return collect(f.byNode[node])
}

// Select returns every pod for which match is true.
func (f *Floor) Select(match func(*corev1.Pod) bool) []*corev1.Pod {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []*corev1.Pod
	for _, p := range f.byKey {
		if match(p) {
			out = append(out, p)
		}
	}
	return out
}

func collect(m map[types.NamespacedName]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	return out
}
