package controllerruntime

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/clientgo"
)

// newInformer returns the controller-runtime Informer of a type: the
// client-go view of its informer or, when its namespaces are cached by
// several informers, one that spans them.
func newInformer(tc *typeCache) cache.Informer {
	views := make([]*clientgo.View[client.Object], len(tc.parts))
	for n, p := range tc.parts {
		views[n] = clientgo.SharedIndexInformer(p.inf)
	}
	if len(views) == 1 {
		return &singleInformer{views[0]}
	}
	synced := make([]<-chan struct{}, len(views))
	stops := make([]<-chan struct{}, len(views))
	for n, v := range views {
		synced[n], stops[n] = v.Informer().Synced(), v.Informer().Stopped()
	}
	name := tc.key.gvk.String()
	return &multiInformer{name: name, views: views, synced: newAllDone(name, synced, stops)}
}

// consistencyHandlerPkg is the package of the handler that
// controller-runtime's read-your-writes client
// (client.CacheOptions.EnableReadYourWritesConsistency) adds to the
// informer of each kind it reads: it keeps one resource version per kind,
// the highest any event carried, and takes every write up to it as cached.
const consistencyHandlerPkg = "sigs.k8s.io/controller-runtime/pkg/client/internal/consistencyhandler"

// refuseSplitStreams returns an error if h is controller-runtime's
// read-your-writes handler and the events of the type come from several
// watch streams (streams > 1, or a watch per namespace): their versions
// interleave, so the highest version seen passes a write in one namespace
// before its event has arrived, and a read would not show the write.
func refuseSplitStreams(name string, h toolscache.ResourceEventHandler, streams int, perNamespace bool) error {
	t := reflect.TypeOf(h)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().PkgPath() != consistencyHandlerPkg {
		return nil
	}
	if streams <= 1 && !perNamespace {
		return nil
	}
	return fmt.Errorf("controllerruntime: %s: read-your-writes consistency (EnableReadYourWritesConsistency) keeps one resource version per kind, "+
		"which %d watches of separate namespaces cannot serve: cache this type with one watch, in all namespaces, in one namespace, or with a "+
		"NamespaceSelector and NamespaceModeClusterWide", name, max(streams, 2))
}

// singleInformer is the Informer of a type cached by one informer.
type singleInformer struct {
	*clientgo.View[client.Object]
}

func (s *singleInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (s *singleInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

func (s *singleInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	inf := s.Informer()
	if err := refuseSplitStreams(inf.String(), h, 1, inf.NamespaceMode() == informers.NamespaceModePerNamespace); err != nil {
		return nil, err
	}
	return s.View.AddEventHandlerWithOptions(h, opts)
}

// multiInformer is the Informer of a type cached by several informers,
// one per namespace setting. A handler added to it is added to each, and
// called by each for its own objects.
type multiInformer struct {
	name   string
	views  []*clientgo.View[client.Object]
	synced *allDone
}

func (m *multiInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (m *multiInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

func (m *multiInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	if err := refuseSplitStreams(m.name, h, len(m.views), false); err != nil {
		return nil, err
	}
	reg := &multiRegistration{name: m.name}
	var synced, stops []<-chan struct{}
	for _, v := range m.views {
		r, err := v.AddEventHandlerWithOptions(h, opts)
		if err != nil {
			for n, added := range reg.regs {
				_ = m.views[n].RemoveEventHandler(added)
			}
			return nil, err
		}
		added := r.(clientgo.Registration[client.Object])
		reg.regs = append(reg.regs, added)
		synced = append(synced, added.Synced())
		stops = append(stops, v.Informer().Stopped())
	}
	reg.synced = newAllDone(m.name, synced, stops)
	return reg, nil
}

func (m *multiInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	reg, ok := handle.(*multiRegistration)
	if !ok || len(reg.regs) != len(m.views) {
		return fmt.Errorf("controllerruntime: %s: RemoveEventHandler: %T is not a registration of this informer", m.name, handle)
	}
	var errs []error
	for n, r := range reg.regs {
		errs = append(errs, m.views[n].RemoveEventHandler(r))
	}
	return errors.Join(errs...)
}

func (m *multiInformer) AddIndexers(indexers toolscache.Indexers) error {
	var errs []error
	for _, v := range m.views {
		errs = append(errs, v.AddIndexers(indexers))
	}
	return errors.Join(errs...)
}

func (m *multiInformer) HasSynced() bool {
	for _, v := range m.views {
		if !v.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns the informer's one checker, done once every
// informer of the type has synced.
func (m *multiInformer) HasSyncedChecker() toolscache.DoneChecker {
	return m.synced
}

func (m *multiInformer) IsStopped() bool {
	for _, v := range m.views {
		if !v.IsStopped() {
			return false
		}
	}
	return true
}

// multiRegistration is a handler added to each informer of a type.
type multiRegistration struct {
	name   string
	regs   []clientgo.Registration[client.Object]
	synced *allDone
}

func (r *multiRegistration) HasSynced() bool {
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns the registration's one checker, done once the
// handler has been called for the initial state of every informer.
func (r *multiRegistration) HasSyncedChecker() toolscache.DoneChecker {
	return r.synced
}

// allDone is a toolscache.DoneChecker done once every channel of synced is
// closed. Its channel is made once and closed once. Done closes it at
// once when every channel is already closed; otherwise the first call
// starts the one goroutine that waits for them, which also ends, leaving
// the checker not done, once one of the informers has stopped (stops, in
// the same order as synced).
type allDone struct {
	name          string
	synced, stops []<-chan struct{}
	wait, close   sync.Once
	done          chan struct{}
}

func newAllDone(name string, synced, stops []<-chan struct{}) *allDone {
	return &allDone{name: name, synced: synced, stops: stops, done: make(chan struct{})}
}

func (a *allDone) Name() string { return a.name }

func (a *allDone) Done() <-chan struct{} {
	if a.allClosed() {
		a.close.Do(func() { close(a.done) })
		return a.done
	}
	a.wait.Do(func() { go a.waitSynced() })
	return a.done
}

func (a *allDone) allClosed() bool {
	for _, ch := range a.synced {
		select {
		case <-ch:
		default:
			return false
		}
	}
	return true
}

func (a *allDone) waitSynced() {
	for n, ch := range a.synced {
		select {
		case <-ch:
		case <-a.stops[n]:
			return
		}
	}
	a.close.Do(func() { close(a.done) })
}
