package informers

import (
	"maps"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ViewMeta is the metadata of a view: the fields of metav1.ObjectMeta that
// the library and most controllers read, and none of the others
// (managedFields, generateName, selfLink, deletionGracePeriodSeconds),
// which the decoder skips. Embed it in a view under "metadata":
//
//	informers.ViewMeta `json:"metadata"`
//
// It implements metav1.Object, whose setters of the fields it does not
// keep do nothing and whose getters of them return zero values, and
// GetObjectKind, with an empty kind, so that a view needs a
// DeepCopyObject method only. Annotations are kept: the library reads
// one on the bookmark that ends a watch-list, and controllers read them;
// where they are large and unread, skip them with
// Options.SkipFields "metadata.annotations" (bookmarks keep theirs). A
// view that needs the whole metadata embeds metav1.ObjectMeta instead,
// with metav1.TypeMeta for GetObjectKind.
//
// A view is a Go struct that declares the fields of a resource a
// controller reads, under the JSON names of the API type (nested structs,
// slices, maps and pointers of its own, or the API's own types where it
// wants them whole), with its metadata in a ViewMeta (or a
// metav1.ObjectMeta) under "metadata":
//
//	type PodView struct {
//		informers.ViewMeta `json:"metadata"`
//		Spec               struct {
//			NodeName   string `json:"nodeName"`
//			Containers []struct {
//				Name  string `json:"name"`
//				Image string `json:"image"`
//			} `json:"containers"`
//		} `json:"spec"`
//	}
//
//	func (p *PodView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }
//
// An informer of a view is asked for by its resource, which a view, being
// no type of the scheme, cannot tell:
//
//	pods := informers.InformerWith(f, informers.Options[*PodView]{Resource: corev1.SchemeGroupVersion.WithResource("pods")})
//
// The informer decodes each object straight into the view, from protobuf
// for built-in types and from JSON for custom resources (or a server that
// answers in JSON): the fields the view lacks are skipped on the wire and
// never built, so that the cache holds only what the controller reads.
// A view is checked against the type it projects: against the scheme's
// Go type of the resource's kind, if it knows one, when it is asked for:
// a field the type has not, or of a kind it cannot be decoded into (an
// int for an int32 of a built-in type, a struct for a type whose JSON is
// its own, such as metav1.Time, resource.Quantity or intstr.IntOrString,
// which a view holds as they are), is an error of the informer naming the
// field. For a resource the scheme does not know, it is checked against
// the OpenAPI v3 schema the server publishes for it, before the first
// list and whenever that schema changes (see SchemaCheck).
//
// Everything that reads metav1.Object works on views: listers, indexes,
// handlers and Deleted, the Tracker, sharding and namespace selection. A
// view of a resource and its full type, or two views of it, can be asked
// for side by side: each is an informer, and a watch, of its own. Options
// apply as to the full type: SkipFields names the view's fields by their
// JSON paths; DisableDecoder cannot be set, the library's decoders being
// the only ones that decode views. A view of metadata alone is asked of
// the server as PartialObjectMetadata, so that the rest of each object is
// not even sent; a view of more fields is decoded from whole objects.
// Writing a view back to the server would drop every field it omits:
// change objects with patches. For the other ways to keep less, see the
// table "When to use which" in docs/memory.md.
type ViewMeta struct {
	Name              string                  `json:"name,omitempty"`
	Namespace         string                  `json:"namespace,omitempty"`
	UID               types.UID               `json:"uid,omitempty"`
	ResourceVersion   string                  `json:"resourceVersion,omitempty"`
	Generation        int64                   `json:"generation,omitempty"`
	CreationTimestamp metav1.Time             `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string       `json:"labels,omitempty"`
	Annotations       map[string]string       `json:"annotations,omitempty"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	Finalizers        []string                `json:"finalizers,omitempty"`
}

var _ metav1.Object = (*ViewMeta)(nil)

// ViewMetaOf returns the ViewMeta of obj's metadata, such as that of the
// object a client's write returned, for a Tracker of views:
//
//	pod, err := client.CoreV1().Pods(ns).Create(ctx, podFor(key), metav1.CreateOptions{})
//	...
//	return tracker.Wrote(key, &PodView{ViewMeta: informers.ViewMetaOf(pod)})
//
// It shares obj's labels, annotations, owner references and finalizers.
func ViewMetaOf(obj metav1.Object) ViewMeta {
	return ViewMeta{
		Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(), Generation: obj.GetGeneration(),
		CreationTimestamp: obj.GetCreationTimestamp(), DeletionTimestamp: obj.GetDeletionTimestamp(),
		Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(),
		OwnerReferences: obj.GetOwnerReferences(), Finalizers: obj.GetFinalizers(),
	}
}

// GetObjectKind returns an empty kind, as the objects of an informer have:
// a view is no type of the scheme.
func (m *ViewMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetNamespace returns the namespace.
func (m *ViewMeta) GetNamespace() string { return m.Namespace }

// SetNamespace sets the namespace.
func (m *ViewMeta) SetNamespace(namespace string) { m.Namespace = namespace }

// GetName returns the name.
func (m *ViewMeta) GetName() string { return m.Name }

// SetName sets the name.
func (m *ViewMeta) SetName(name string) { m.Name = name }

// GetGenerateName returns "": a ViewMeta does not keep it.
func (m *ViewMeta) GetGenerateName() string { return "" }

// SetGenerateName does nothing: a ViewMeta does not keep it.
func (m *ViewMeta) SetGenerateName(string) {}

// GetUID returns the UID.
func (m *ViewMeta) GetUID() types.UID { return m.UID }

// SetUID sets the UID.
func (m *ViewMeta) SetUID(uid types.UID) { m.UID = uid }

// GetResourceVersion returns the resource version.
func (m *ViewMeta) GetResourceVersion() string { return m.ResourceVersion }

// SetResourceVersion sets the resource version.
func (m *ViewMeta) SetResourceVersion(version string) { m.ResourceVersion = version }

// GetGeneration returns the generation.
func (m *ViewMeta) GetGeneration() int64 { return m.Generation }

// SetGeneration sets the generation.
func (m *ViewMeta) SetGeneration(generation int64) { m.Generation = generation }

// GetSelfLink returns "": a ViewMeta does not keep it.
func (m *ViewMeta) GetSelfLink() string { return "" }

// SetSelfLink does nothing: a ViewMeta does not keep it.
func (m *ViewMeta) SetSelfLink(string) {}

// GetCreationTimestamp returns the creation time.
func (m *ViewMeta) GetCreationTimestamp() metav1.Time { return m.CreationTimestamp }

// SetCreationTimestamp sets the creation time.
func (m *ViewMeta) SetCreationTimestamp(t metav1.Time) { m.CreationTimestamp = t }

// GetDeletionTimestamp returns the deletion time, nil if the object is not
// being deleted.
func (m *ViewMeta) GetDeletionTimestamp() *metav1.Time { return m.DeletionTimestamp }

// SetDeletionTimestamp sets the deletion time.
func (m *ViewMeta) SetDeletionTimestamp(t *metav1.Time) { m.DeletionTimestamp = t }

// GetDeletionGracePeriodSeconds returns nil: a ViewMeta does not keep it.
func (m *ViewMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds does nothing: a ViewMeta does not keep it.
func (m *ViewMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels returns the labels.
func (m *ViewMeta) GetLabels() map[string]string { return m.Labels }

// SetLabels sets the labels.
func (m *ViewMeta) SetLabels(labels map[string]string) { m.Labels = labels }

// GetAnnotations returns the annotations.
func (m *ViewMeta) GetAnnotations() map[string]string { return m.Annotations }

// SetAnnotations sets the annotations.
func (m *ViewMeta) SetAnnotations(annotations map[string]string) { m.Annotations = annotations }

// GetFinalizers returns the finalizers.
func (m *ViewMeta) GetFinalizers() []string { return m.Finalizers }

// SetFinalizers sets the finalizers.
func (m *ViewMeta) SetFinalizers(finalizers []string) { m.Finalizers = finalizers }

// GetOwnerReferences returns the owner references.
func (m *ViewMeta) GetOwnerReferences() []metav1.OwnerReference { return m.OwnerReferences }

// SetOwnerReferences sets the owner references.
func (m *ViewMeta) SetOwnerReferences(refs []metav1.OwnerReference) { m.OwnerReferences = refs }

// GetManagedFields returns nil: a ViewMeta does not keep them.
func (m *ViewMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields does nothing: a ViewMeta does not keep them.
func (m *ViewMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// DeepCopyInto copies m into out, sharing nothing with m, as
// controller-gen's generated code expects of a field's type.
func (m *ViewMeta) DeepCopyInto(out *ViewMeta) {
	*out = *m
	m.CreationTimestamp.DeepCopyInto(&out.CreationTimestamp)
	out.DeletionTimestamp = m.DeletionTimestamp.DeepCopy()
	out.Labels = maps.Clone(m.Labels)
	out.Annotations = maps.Clone(m.Annotations)
	if m.OwnerReferences != nil {
		out.OwnerReferences = make([]metav1.OwnerReference, len(m.OwnerReferences))
		for i := range m.OwnerReferences {
			m.OwnerReferences[i].DeepCopyInto(&out.OwnerReferences[i])
		}
	}
	if m.Finalizers != nil {
		out.Finalizers = append(make([]string, 0, len(m.Finalizers)), m.Finalizers...)
	}
}

// DeepCopy returns a copy of m that shares nothing with it.
func (m *ViewMeta) DeepCopy() *ViewMeta {
	if m == nil {
		return nil
	}
	out := new(ViewMeta)
	m.DeepCopyInto(out)
	return out
}

// DeepCopyView returns a copy of *v that shares no memory a caller could
// change with it, nil if v is nil: the DeepCopyObject of a view, written
// once for every type,
//
//	func (p *PodView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }
//
// It copies by reflection, with a plan made once per type: pointers,
// slices, maps and interfaces are copied deeply, the fields of structs
// unexported ones included, a runtime.Object held in an interface by its
// DeepCopyObject, a struct with unexported fields by its DeepCopyInto
// method if it has one (resource.Quantity), a time.Time as it is. A
// DeepCopyObject generated by controller-gen serves as well.
func DeepCopyView[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := new(T)
	*c = *v
	if cp := rootCopier(reflect.TypeFor[T]()); cp.fn != nil {
		cp.fn(unsafe.Pointer(c), unsafe.Pointer(v))
	}
	return c
}

// copier deep-copies values of one type. fn, called on dst, which holds a
// shallow copy of the value at src, replaces its parts that must not be
// shared with copies; it is nil where a shallow copy shares nothing a
// caller could change (numbers, strings, and structs of them).
type copier struct {
	fn func(dst, src unsafe.Pointer)
}

var (
	// copiers holds the copier of each type, rootCopiers the copier of
	// each type DeepCopyView is called on, which never calls its own
	// DeepCopyInto: that may call DeepCopyView.
	copiers, rootCopiers sync.Map // reflect.Type → *copier
	copiersMu            sync.Mutex
)

// rootCopier returns the copier of t for DeepCopyView.
func rootCopier(t reflect.Type) *copier {
	if c, ok := rootCopiers.Load(t); ok {
		return c.(*copier)
	}
	copiersMu.Lock()
	defer copiersMu.Unlock()
	b := copierBuilder{building: map[reflect.Type]*copier{}, open: map[reflect.Type]bool{}}
	c := b.structural(t)
	b.done()
	rootCopiers.Store(t, c)
	return c
}

// copierOf returns the copier of t.
func copierOf(t reflect.Type) *copier {
	if c, ok := copiers.Load(t); ok {
		return c.(*copier)
	}
	copiersMu.Lock()
	defer copiersMu.Unlock()
	b := copierBuilder{building: map[reflect.Type]*copier{}, open: map[reflect.Type]bool{}}
	c := b.of(t)
	b.done()
	return c
}

// copierBuilder builds the copiers of a type and of the types it holds;
// building holds those it built, found again by types that hold
// themselves, open those whose building has not ended, whose fn is not
// known yet.
type copierBuilder struct {
	building map[reflect.Type]*copier
	open     map[reflect.Type]bool
}

// done stores the copiers built.
func (b *copierBuilder) done() {
	for t, c := range b.building {
		copiers.LoadOrStore(t, c)
	}
}

var (
	quantityType = reflect.TypeFor[resource.Quantity]()
	timeType     = reflect.TypeFor[time.Time]()
)

// of returns the copier of t.
func (b *copierBuilder) of(t reflect.Type) *copier {
	if c, ok := copiers.Load(t); ok {
		return c.(*copier)
	}
	if c, ok := b.building[t]; ok {
		return c
	}
	c := &copier{}
	b.building[t] = c
	if t == timeType {
		return c // its location is never changed
	}
	if t.Kind() == reflect.Struct && hasUnexported(t) {
		if c.fn = deepCopyInto(t); c.fn != nil {
			return c
		}
	}
	b.open[t] = true
	*c = *b.structural(t)
	delete(b.open, t)
	return c
}

// hasUnexported reports whether struct t has unexported fields.
func hasUnexported(t reflect.Type) bool {
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

// deepCopyInto returns the copier of struct t with unexported fields: its
// DeepCopyInto method, or nil if it has none.
func deepCopyInto(t reflect.Type) func(dst, src unsafe.Pointer) {
	if t == quantityType {
		return func(dst, src unsafe.Pointer) {
			*(*resource.Quantity)(dst) = (*resource.Quantity)(src).DeepCopy()
		}
	}
	m, ok := reflect.PointerTo(t).MethodByName("DeepCopyInto")
	if !ok || m.Type.NumIn() != 2 || m.Type.In(1) != reflect.PointerTo(t) || m.Type.NumOut() != 0 {
		return nil
	}
	return func(dst, src unsafe.Pointer) {
		m.Func.Call([]reflect.Value{reflect.NewAt(t, src), reflect.NewAt(t, dst)})
	}
}

// structural returns the copier of t that follows its structure.
func (b *copierBuilder) structural(t reflect.Type) *copier {
	switch t.Kind() {
	case reflect.Struct:
		type part struct {
			off uintptr
			c   *copier
		}
		var parts []part
		for i := range t.NumField() {
			sf := t.Field(i)
			if c := b.of(sf.Type); c.fn != nil || b.open[sf.Type] {
				parts = append(parts, part{sf.Offset, c})
			}
		}
		if len(parts) == 0 {
			return &copier{}
		}
		return &copier{fn: func(dst, src unsafe.Pointer) {
			for _, p := range parts {
				if p.c.fn != nil {
					p.c.fn(unsafe.Add(dst, p.off), unsafe.Add(src, p.off))
				}
			}
		}}
	case reflect.Array:
		elem, size := b.of(t.Elem()), t.Elem().Size()
		if elem.fn == nil && !b.open[t.Elem()] {
			return &copier{}
		}
		return &copier{fn: func(dst, src unsafe.Pointer) {
			if elem.fn != nil {
				for i := range uintptr(t.Len()) {
					elem.fn(unsafe.Add(dst, i*size), unsafe.Add(src, i*size))
				}
			}
		}}
	case reflect.Pointer:
		elem, et := b.of(t.Elem()), t.Elem()
		return &copier{fn: func(dst, src unsafe.Pointer) {
			from := *(*unsafe.Pointer)(src)
			if from == nil {
				return
			}
			to := reflect.New(et)
			to.Elem().Set(reflect.NewAt(et, from).Elem())
			if elem.fn != nil {
				elem.fn(to.UnsafePointer(), from)
			}
			*(*unsafe.Pointer)(dst) = to.UnsafePointer()
		}}
	case reflect.Slice:
		elem, size := b.of(t.Elem()), t.Elem().Size()
		return &copier{fn: func(dst, src unsafe.Pointer) {
			from := reflect.NewAt(t, src).Elem()
			if from.IsNil() {
				return
			}
			to := reflect.MakeSlice(t, from.Len(), from.Len())
			reflect.Copy(to, from)
			if elem.fn != nil {
				for i := range uintptr(from.Len()) {
					elem.fn(unsafe.Add(to.UnsafePointer(), i*size), unsafe.Add(from.UnsafePointer(), i*size))
				}
			}
			reflect.NewAt(t, dst).Elem().Set(to)
		}}
	case reflect.Map:
		key, val := b.of(t.Key()), b.of(t.Elem())
		return &copier{fn: func(dst, src unsafe.Pointer) {
			from := reflect.NewAt(t, src).Elem()
			if from.IsNil() {
				return
			}
			to := reflect.MakeMapWithSize(t, from.Len())
			for it := from.MapRange(); it.Next(); {
				to.SetMapIndex(deepCopyValue(key, it.Key()), deepCopyValue(val, it.Value()))
			}
			reflect.NewAt(t, dst).Elem().Set(to)
		}}
	case reflect.Interface:
		return &copier{fn: func(dst, src unsafe.Pointer) {
			from := reflect.NewAt(t, src).Elem()
			if from.IsNil() {
				return
			}
			v := from.Elem()
			var c reflect.Value
			if obj, ok := v.Interface().(runtime.Object); ok && v.Kind() == reflect.Pointer && !v.IsNil() {
				c = reflect.ValueOf(obj.DeepCopyObject())
			} else {
				c = deepCopyValue(copierOf(v.Type()), v)
			}
			reflect.NewAt(t, dst).Elem().Set(c)
		}}
	}
	return &copier{}
}

// deepCopyValue returns a deep copy of v, whose copier is c.
func deepCopyValue(c *copier, v reflect.Value) reflect.Value {
	if c.fn == nil {
		return v
	}
	from := reflect.New(v.Type())
	from.Elem().Set(v)
	to := reflect.New(v.Type())
	to.Elem().Set(v)
	c.fn(to.UnsafePointer(), from.UnsafePointer())
	return to.Elem()
}
