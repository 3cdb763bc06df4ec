package informers_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testutil"
)

// Fields to skip read as zero in the cache and in handlers, also when the
// objects come decoded by another decoder (here client-go's codecs).
func TestSkipFieldsClearsDecodedObjects(t *testing.T) {
	wire, err := bf.NewWirePods(bf.NewPodList(50, bf.PodOptions{ManagedFields: true, Seed: 11}), bf.Protobuf, 0)
	require.NoError(t, err)
	inf := runListed(t, informers.Options[*corev1.Pod]{SkipFields: []string{"metadata.managedFields", "spec.containers.env"}}, wire.List)
	pods := inf.Lister().List(labels.Everything())
	require.Len(t, pods, 50)
	for _, p := range pods {
		require.Empty(t, p.ManagedFields)
		require.Empty(t, p.Spec.Containers[0].Env)
		require.NotEmpty(t, p.Spec.Containers[0].Image)
	}
}

// Fields to skip are checked when the informer is made.
func TestSkipFieldsErrors(t *testing.T) {
	lw := informers.NewListWatch[*corev1.Pod](
		func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return &corev1.PodList{}, nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil })
	for _, tc := range []struct{ path, want string }{
		{"spec.nothing", `no field "nothing"`},
		{"metadata.name", "the informer needs it"},
		{"spec.nodeName.deeper", "has no fields"},
	} {
		_, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{SkipFields: []string{tc.path}})
		require.ErrorContains(t, err, tc.want, tc.path)
	}
	ulw := informers.NewListWatch[*unstructured.Unstructured](
		func(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
			return &unstructured.UnstructuredList{}, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil })
	for _, tc := range []struct{ path, want string }{
		{"metadata.name", "the informer needs it"},
		{"spec..env", "field names joined by dots"},
	} {
		_, err := informers.NewInformer(ulw, informers.Options[*unstructured.Unstructured]{SkipFields: []string{tc.path}})
		require.ErrorContains(t, err, tc.want, tc.path)
	}
	_, err := informers.NewInformer(ulw, informers.Options[*unstructured.Unstructured]{SkipFields: []string{"metadata.managedFields"}})
	require.NoError(t, err, "unstructured objects have no type to check paths against")
	alw := informers.NewListWatch[*bf.Application](
		func(context.Context, metav1.ListOptions) (*bf.ApplicationList, error) {
			return &bf.ApplicationList{}, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil })
	_, err = informers.NewInformer(alw, informers.Options[*bf.Application]{SkipFields: []string{"spec.nothing"}})
	require.ErrorContains(t, err, `no field "nothing"`, "custom resources' paths are checked against their json names")
}

// Lists and watch frames in protobuf are decoded by the library's decoder
// into objects that share their equal parts, or, with DisableDecoder, by
// client-go's codecs and the generated code into objects that share
// nothing; either way the informer caches what the server sent.
func TestDecoderOnTheWire(t *testing.T) {
	podList := bf.NewPodList(20, bf.PodOptions{Namespaces: 1, Deployments: 2, Seed: 12})
	wire, err := bf.NewWirePods(podList, bf.Protobuf, 5)
	require.NoError(t, err)
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("disable=%v", disable), func(t *testing.T) {
			r, w := io.Pipe()
			t.Cleanup(func() { w.Close() })
			opts := informers.Options[*corev1.Pod]{Tuning: informers.Tuning{DisableDecoder: informers.Set(disable), PageSize: informers.Set[int64](5)}}
			lw, err := informers.WireListWatch(opts, wire.ListBytes, func() io.ReadCloser { return r })
			require.NoError(t, err)
			lw.DisableWatchList = true
			inf, err := informers.NewInformer(lw, opts)
			require.NoError(t, err)
			testutil.Run(t, inf)
			waitSynced(t, inf)
			require.Equal(t, 20, inf.Lister().Len())
			for i := range podList.Len() {
				ns, name := podList.Key(i)
				got, err := inf.Lister().Namespace(ns).Get(name)
				require.NoError(t, err)
				want, err := wire.Pod(i, 0)
				require.NoError(t, err)
				want.TypeMeta = metav1.TypeMeta{} // as a client's decoder leaves it
				require.Equal(t, want, got)
			}
			a, b := podAt(t, inf, podList, 0), podAt(t, inf, podList, 2) // of one deployment
			require.Equal(t, !disable, &a.Spec.Containers[0] == &b.Spec.Containers[0], "containers shared")

			updated := bf.Modified(podList.Pod(3), 5000)
			frame, err := bf.WatchFrame(watch.Modified, updated)
			require.NoError(t, err)
			_, err = w.Write(frame)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				got := podAt(t, inf, podList, 3)
				return got.ResourceVersion == "5000"
			}, 10*time.Second, 5*time.Millisecond)
			want, err := wire.Pod(3, 5000)
			require.NoError(t, err)
			want.TypeMeta = metav1.TypeMeta{}
			require.Equal(t, want, podAt(t, inf, podList, 3))
		})
	}
}

// podAt returns pod i of l from inf's cache.
func podAt(t *testing.T, inf *informers.SharedInformer[*corev1.Pod], l *bf.PodList, i int) *corev1.Pod {
	t.Helper()
	ns, name := l.Key(i)
	p, err := inf.Lister().Namespace(ns).Get(name)
	require.NoError(t, err)
	return p
}

// A factory's informer is made with the fields to skip of the request that
// creates it: a later request with others fails, one without any shares
// it.
func TestFactorySkipFields(t *testing.T) {
	f := informers.NewFactory(fake.NewClientset())
	skip := []string{"metadata.managedFields", "status.conditions"}
	first := informers.InformerWith(f, informers.Options[*corev1.Pod]{SkipFields: skip})
	require.NoError(t, first.LastError())
	require.Same(t, first, informers.Informer[*corev1.Pod](f), "no fields given")
	require.Same(t, first, informers.InformerWith(f, informers.Options[*corev1.Pod]{SkipFields: []string{"status.conditions", "metadata.managedFields"}}), "in another order")
	other := informers.InformerWith(f, informers.Options[*corev1.Pod]{SkipFields: []string{"metadata.managedFields"}})
	require.ErrorContains(t, other.LastError(), "already exists with SkipFields")
	off := informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{DisableDecoder: informers.Set(true)}})
	require.ErrorContains(t, off.LastError(), "DisableDecoder false")
	bad := informers.InformerWith(f, informers.Options[*corev1.Secret]{SkipFields: []string{"data.nothing"}})
	require.ErrorContains(t, bad.LastError(), "data.nothing")
}

// Fields to skip of custom resources, with a Go type or unstructured, are
// left out whether the factory's JSON decoder decodes them or they come
// decoded from a ListWatch of the user's.
func TestSkipFieldsOfCustomResources(t *testing.T) {
	srv, err := bf.NewApplicationServer(30, 10, true)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	skip := []string{"status.resources", "spec.source.helm.parameters", "metadata.managedFields"}
	scheme := runtime.NewScheme()
	bf.AddApplications(scheme)
	check := func(t *testing.T, name string, spec map[string]any, status map[string]any) {
		t.Helper()
		require.NotEmpty(t, name)
		require.NotContains(t, status, "resources")
		require.Contains(t, status, "sync")
		source := spec["source"].(map[string]any)
		require.NotEmpty(t, source["repoURL"])
		require.NotContains(t, source["helm"], "parameters")
		require.Contains(t, source["helm"], "valueFiles")
	}
	asMaps := func(t *testing.T, a *bf.Application) (map[string]any, map[string]any) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
		require.NoError(t, err)
		return u["spec"].(map[string]any), u["status"].(map[string]any)
	}
	applications := func(context.Context, metav1.ListOptions) (*bf.ApplicationList, error) {
		l := &bf.ApplicationList{}
		for i := range 30 {
			l.Items = append(l.Items, *bf.NewApplication(i, 1))
		}
		return l, nil
	}
	noWatch := func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil }

	t.Run("typed, factory", func(t *testing.T) {
		f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: srv.Config(), Scheme: scheme, Tuning: informers.Tuning{DisableWatchList: informers.Set(true)}})
		inf := informers.InformerWith(f, informers.Options[*bf.Application]{SkipFields: skip})
		require.NoError(t, inf.LastError())
		testutil.StartFactory(t, f)
		waitSynced(t, f)
		require.Equal(t, 30, inf.Lister().Len())
		for _, a := range inf.Lister().List(labels.Everything()) {
			spec, status := asMaps(t, a)
			check(t, a.Name, spec, status)
		}
	})
	t.Run("typed, ListWatch", func(t *testing.T) {
		lw := informers.NewListWatch[*bf.Application](applications, noWatch)
		lw.DisableWatchList = true
		inf, err := informers.NewInformer(lw, informers.Options[*bf.Application]{SkipFields: skip})
		require.NoError(t, err)
		testutil.Run(t, inf)
		waitSynced(t, inf)
		for _, a := range inf.Lister().List(labels.Everything()) {
			spec, status := asMaps(t, a)
			check(t, a.Name, spec, status)
		}
	})
	t.Run("unstructured, factory", func(t *testing.T) {
		f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: srv.Config(), Tuning: informers.Tuning{DisableWatchList: informers.Set(true)}})
		inf := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: bf.ApplicationResource, SkipFields: skip})
		require.NoError(t, inf.LastError())
		testutil.StartFactory(t, f)
		waitSynced(t, f)
		require.Equal(t, 30, inf.Lister().Len())
		for _, u := range inf.Lister().List(labels.Everything()) {
			check(t, u.GetName(), u.Object["spec"].(map[string]any), u.Object["status"].(map[string]any))
		}
	})
	t.Run("unstructured, ListWatch", func(t *testing.T) {
		lw := informers.NewListWatch[*unstructured.Unstructured](
			func(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
				l, err := applications(ctx, o)
				if err != nil {
					return nil, err
				}
				out := &unstructured.UnstructuredList{}
				for i := range l.Items {
					m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&l.Items[i])
					if err != nil {
						return nil, err
					}
					out.Items = append(out.Items, unstructured.Unstructured{Object: m})
				}
				return out, nil
			}, noWatch)
		lw.DisableWatchList = true
		inf, err := informers.NewInformer(lw, informers.Options[*unstructured.Unstructured]{SkipFields: skip})
		require.NoError(t, err)
		testutil.Run(t, inf)
		waitSynced(t, inf)
		require.Equal(t, 30, inf.Lister().Len())
		for _, u := range inf.Lister().List(labels.Everything()) {
			check(t, u.GetName(), u.Object["spec"].(map[string]any), u.Object["status"].(map[string]any))
		}
	})
}
