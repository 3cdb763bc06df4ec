package informers

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// noMetrics is a Metrics that records nothing, to tell one Metrics from
// another.
type noMetrics struct{ name string }

func (noMetrics) Informer(AnyInformer) InformerMetrics                { return nil }
func (noMetrics) Handler(AnyInformer, AnyRegistration) HandlerMetrics { return nil }

// resolved is what a test reads of an informer's resolved configuration:
// one value per Tuning field, comparable.
type resolved struct {
	namespace, namespaceSelector string
	namespaceMode                NamespaceMode
	stripManaged                 bool
	resync                       time.Duration
	noDecoder, noWatchList       bool
	onError                      uintptr
	backoff                      *wait.Backoff
	minWatchTimeout              time.Duration
	pageSize                     int64
	metrics                      Metrics
	staleness                    *StalenessOptions
	schemaCheck                  SchemaCheck
}

func resolvedOf[T Object](c config[T]) resolved {
	r := resolved{
		namespace: c.sel.namespace, namespaceSelector: c.sel.namespaces, namespaceMode: c.namespaceMode,
		stripManaged: c.stripManaged, resync: c.resync, noDecoder: c.decoding.Disabled, noWatchList: c.noWatchList,
		backoff: c.backoff, minWatchTimeout: c.minWatchTimeout, pageSize: c.pageSize, metrics: c.metrics, staleness: c.staleness,
		schemaCheck: c.schemaCheck,
	}
	if c.onError != nil {
		r.onError = funcPtr(c.onError)
	}
	return r
}

// TestFactoryDefaultsOverriddenPerInformer sets each Tuning field on a
// factory and overrides it on one informer both ways: to another value,
// and back to the default, which turns a factory-wide setting off. An
// informer that leaves a field unset inherits the factory's.
func TestFactoryDefaultsOverriddenPerInformer(t *testing.T) {
	logErrors := func(error) {}
	dropErrors := func(error) {}
	factoryBackoff, informerBackoff := &wait.Backoff{Steps: 1}, &wait.Backoff{Steps: 2}
	factoryStaleness, informerStaleness := &StalenessOptions{Interval: time.Minute}, &StalenessOptions{Interval: time.Hour}
	factoryMetrics, informerMetrics := noMetrics{"factory"}, noMetrics{"informer"}

	defaults := resolved{minWatchTimeout: minWatchTimeout}
	tests := []struct {
		name string
		// factory sets the field on the factory; inherit is what an
		// informer that leaves it unset resolves to.
		factory Tuning
		inherit func(*resolved)
		// other sets the field to another value on the informer, and
		// otherWant is what that resolves to; off sets it back to the
		// default.
		other     Tuning
		otherWant func(*resolved)
		off       Tuning
	}{{
		name:      "Namespace",
		factory:   Tuning{Namespace: Set("a")},
		inherit:   func(r *resolved) { r.namespace = "a" },
		other:     Tuning{Namespace: Set("b")},
		otherWant: func(r *resolved) { r.namespace = "b" },
		off:       Tuning{Namespace: Set("")},
	}, {
		name:      "NamespaceSelector",
		factory:   Tuning{NamespaceSelector: Set("team=a")},
		inherit:   func(r *resolved) { r.namespaceSelector = "team=a" },
		other:     Tuning{NamespaceSelector: Set("team=b")},
		otherWant: func(r *resolved) { r.namespaceSelector = "team=b" },
		off:       Tuning{NamespaceSelector: Set("")},
	}, {
		name:      "NamespaceMode",
		factory:   Tuning{NamespaceMode: Set(NamespaceModePerNamespace)},
		inherit:   func(r *resolved) { r.namespaceMode = NamespaceModePerNamespace },
		other:     Tuning{NamespaceMode: Set(NamespaceModeClusterWide)},
		otherWant: func(r *resolved) { r.namespaceMode = NamespaceModeClusterWide },
		off:       Tuning{NamespaceMode: Set(NamespaceModeAuto)},
	}, {
		name:      "StripManagedFields",
		factory:   Tuning{StripManagedFields: Set(true)},
		inherit:   func(r *resolved) { r.stripManaged = true },
		other:     Tuning{StripManagedFields: Set(true)},
		otherWant: func(r *resolved) { r.stripManaged = true },
		off:       Tuning{StripManagedFields: Set(false)},
	}, {
		name:      "ResyncPeriod",
		factory:   Tuning{ResyncPeriod: Set(time.Minute)},
		inherit:   func(r *resolved) { r.resync = time.Minute },
		other:     Tuning{ResyncPeriod: Set(time.Hour)},
		otherWant: func(r *resolved) { r.resync = time.Hour },
		off:       Tuning{ResyncPeriod: Set(time.Duration(0))},
	}, {
		name:      "DisableDecoder",
		factory:   Tuning{DisableDecoder: Set(true)},
		inherit:   func(r *resolved) { r.noDecoder = true },
		other:     Tuning{DisableDecoder: Set(true)},
		otherWant: func(r *resolved) { r.noDecoder = true },
		off:       Tuning{DisableDecoder: Set(false)},
	}, {
		name:      "DisableWatchList",
		factory:   Tuning{DisableWatchList: Set(true)},
		inherit:   func(r *resolved) { r.noWatchList = true },
		other:     Tuning{DisableWatchList: Set(true)},
		otherWant: func(r *resolved) { r.noWatchList = true },
		off:       Tuning{DisableWatchList: Set(false)},
	}, {
		name:      "OnError",
		factory:   Tuning{OnError: Set(logErrors)},
		inherit:   func(r *resolved) { r.onError = funcPtr(logErrors) },
		other:     Tuning{OnError: Set(dropErrors)},
		otherWant: func(r *resolved) { r.onError = funcPtr(dropErrors) },
		off:       Tuning{OnError: Set[func(error)](nil)},
	}, {
		name:      "Backoff",
		factory:   Tuning{Backoff: Set(factoryBackoff)},
		inherit:   func(r *resolved) { r.backoff = factoryBackoff },
		other:     Tuning{Backoff: Set(informerBackoff)},
		otherWant: func(r *resolved) { r.backoff = informerBackoff },
		off:       Tuning{Backoff: Set[*wait.Backoff](nil)},
	}, {
		name:      "MinWatchTimeout",
		factory:   Tuning{MinWatchTimeout: Set(10 * time.Minute)},
		inherit:   func(r *resolved) { r.minWatchTimeout = 10 * time.Minute },
		other:     Tuning{MinWatchTimeout: Set(20 * time.Minute)},
		otherWant: func(r *resolved) { r.minWatchTimeout = 20 * time.Minute },
		off:       Tuning{MinWatchTimeout: Set(time.Duration(0))},
	}, {
		name:      "PageSize",
		factory:   Tuning{PageSize: Set[int64](100)},
		inherit:   func(r *resolved) { r.pageSize = 100 },
		other:     Tuning{PageSize: Set[int64](7)},
		otherWant: func(r *resolved) { r.pageSize = 7 },
		off:       Tuning{PageSize: Set[int64](0)},
	}, {
		name:      "Metrics",
		factory:   Tuning{Metrics: Set[Metrics](factoryMetrics)},
		inherit:   func(r *resolved) { r.metrics = factoryMetrics },
		other:     Tuning{Metrics: Set[Metrics](informerMetrics)},
		otherWant: func(r *resolved) { r.metrics = informerMetrics },
		off:       Tuning{Metrics: Set[Metrics](nil)},
	}, {
		name:      "Staleness",
		factory:   Tuning{Staleness: Set(factoryStaleness)},
		inherit:   func(r *resolved) { r.staleness = factoryStaleness },
		other:     Tuning{Staleness: Set(informerStaleness)},
		otherWant: func(r *resolved) { r.staleness = informerStaleness },
		off:       Tuning{Staleness: Set[*StalenessOptions](nil)},
	}}
	tests = append(tests, struct {
		name      string
		factory   Tuning
		inherit   func(*resolved)
		other     Tuning
		otherWant func(*resolved)
		off       Tuning
	}{
		name:      "SchemaCheck",
		factory:   Tuning{SchemaCheck: Set(SchemaCheckRequire)},
		inherit:   func(r *resolved) { r.schemaCheck = SchemaCheckRequire },
		other:     Tuning{SchemaCheck: Set(SchemaCheckSkip)},
		otherWant: func(r *resolved) { r.schemaCheck = SchemaCheckSkip },
		off:       Tuning{SchemaCheck: Set(SchemaCheckDefault)},
	})
	// Every field has a case.
	require.Len(t, tests, reflect.TypeFor[Tuning]().NumField())

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				name     string
				informer Tuning
				want     func(*resolved)
			}{
				{"inherited", Tuning{}, tt.inherit},
				{"overridden", tt.other, tt.otherWant},
				{"turned off", tt.off, func(*resolved) {}},
			} {
				t.Run(c.name, func(t *testing.T) {
					want := defaults
					c.want(&want)

					// Resolved as NewInformer and a Factory resolve it.
					cfg, err := resolveConfig(Options[*corev1.ConfigMap]{Tuning: c.informer}, FactoryOptions{Tuning: tt.factory}, corev1.SchemeGroupVersion.WithResource("configmaps"))
					require.NoError(t, err)
					assert.Equal(t, want, resolvedOf(cfg))

					// And through a factory: the informer it makes.
					f := NewFactoryWith(fake.NewClientset(), FactoryOptions{Tuning: tt.factory})
					inf := InformerWith(f, Options[*corev1.ConfigMap]{Tuning: c.informer})
					require.NoError(t, inf.LastError())
					assert.Equal(t, want, resolvedOf(inf.cfg))

					// The factory's default holds for its other informers.
					def := defaults
					tt.inherit(&def)
					secrets := InformerWith(f, Options[*corev1.Secret]{})
					require.NoError(t, secrets.LastError())
					assert.Equal(t, def, resolvedOf(secrets.cfg))
				})
			}
		})
	}
}

// TestTuningConflicts checks what a second request for a factory's
// informer gets when it sets a field the informer was made without: the
// fields that change what is cached conflict, the others are the first
// request's.
func TestTuningConflicts(t *testing.T) {
	tests := []struct {
		name     string
		second   Tuning
		conflict bool
	}{
		{"unset", Tuning{}, false},
		{"StripManagedFields", Tuning{StripManagedFields: Set(true)}, true},
		{"StripManagedFields as made", Tuning{StripManagedFields: Set(false)}, false},
		{"ResyncPeriod", Tuning{ResyncPeriod: Set(time.Hour)}, true},
		{"DisableDecoder", Tuning{DisableDecoder: Set(true)}, true},
		{"DisableWatchList", Tuning{DisableWatchList: Set(true)}, true},
		{"PageSize, the first request's", Tuning{PageSize: Set[int64](3)}, false},
		{"OnError, the first request's", Tuning{OnError: Set(func(error) {})}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFactory(fake.NewClientset())
			first := Informer[*corev1.ConfigMap](f)
			second := InformerWith(f, Options[*corev1.ConfigMap]{Tuning: tt.second})
			if tt.conflict {
				assert.Error(t, second.LastError())
				return
			}
			require.NoError(t, second.LastError())
			assert.Same(t, first, second)
		})
	}
}
