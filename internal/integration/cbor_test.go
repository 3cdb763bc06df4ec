package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// With kube-apiserver's CBORServingAndStorage gate on and client-go's
// ClientsAllowCBOR enabled, a factory's informers of a built-in type, of a
// custom resource and of unstructured objects receive CBOR and cache the
// objects they cache from JSON, by a watch-list and by a list; updates
// arrive through CBOR watches.
func TestCBORCachedAsJSON(t *testing.T) {
	env, cs, ns, ctx := newServer(t, testenv.Options{FeatureGates: map[string]bool{"CBORServingAndStorage": true}}, 3*time.Minute)
	require.True(t, env.FeatureEnabled("CBORServingAndStorage"), "kube-apiserver %s serves CBOR (alpha since 1.32)", env.Server().Version)
	createLabeled(t, env, ns, 10)
	dyn, err := dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	gv := schema.GroupVersion{Group: "cbor.example.com", Version: "v1"}
	gvr := gv.WithResource("gadgets")
	createGadgetCRDIn(t, dyn, ctx, gv.Group)
	s := runtime.NewScheme()
	s.AddKnownTypes(gv, &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(s, gv)
	for i := range 10 {
		g := gadget(ns, fmt.Sprintf("g-%02d", i), int64(i%3))
		g.SetAPIVersion(gv.String())
		_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, true)
	for _, disableWatchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableWatchList=%v", disableWatchList), func(t *testing.T) {
			// What JSON gives.
			raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/apis", gv.Group, gv.Version, "namespaces", ns, "gadgets").
				SetHeader("Accept", "application/json").DoRaw(ctx)
			require.NoError(t, err)
			var wantGadgets GadgetList
			require.NoError(t, json.Unmarshal(raw, &wantGadgets))
			obj, _, err := unstructured.UnstructuredJSONScheme.Decode(raw, nil, nil)
			require.NoError(t, err)
			wantUntyped := obj.(*unstructured.UnstructuredList)
			wantMaps, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)

			w := &wire{}
			cfg := env.Config()
			cfg.ContentType = "application/cbor" // built-in types too
			cfg.WrapTransport = w.wrap
			f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Scheme: s, Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff), DisableWatchList: informers.Set(disableWatchList)}})
			maps := informers.Informer[*corev1.ConfigMap](f)
			gadgets := informers.Informer[*Gadget](f)
			untyped := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: gvr})
			testutil.StartFactory(t, f)
			require.NoError(t, informers.WaitForSync(ctx, f))

			for i := range wantMaps.Items {
				want := &wantMaps.Items[i]
				got, err := maps.Lister().Namespace(ns).Get(want.Name)
				require.NoError(t, err)
				assert.True(t, apiequality.Semantic.DeepEqual(want.ObjectMeta, got.ObjectMeta) && apiequality.Semantic.DeepEqual(want.Data, got.Data), "config map %s:\nJSON: %v\nCBOR: %v", want.Name, want, got)
			}
			for i := range wantGadgets.Items {
				want := &wantGadgets.Items[i]
				got, err := gadgets.Lister().Namespace(ns).Get(want.Name)
				require.NoError(t, err)
				assert.True(t, apiequality.Semantic.DeepEqual(want.ObjectMeta, got.ObjectMeta) && want.Spec == got.Spec, "gadget %s:\nJSON: %v\nCBOR: %v", want.Name, want, got)
			}
			for i := range wantUntyped.Items {
				want := &wantUntyped.Items[i]
				got, err := untyped.Lister().Namespace(ns).Get(want.GetName())
				require.NoError(t, err)
				assert.True(t, apiequality.Semantic.DeepEqual(want.Object, got.Object), "unstructured gadget %s:\nJSON: %v\nCBOR: %v", want.GetName(), want.Object, got.Object)
			}

			g, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "g-00", metav1.GetOptions{})
			require.NoError(t, err)
			size := int64(100)
			if disableWatchList {
				size++
			}
			require.NoError(t, unstructured.SetNestedField(g.Object, size, "spec", "size"))
			updated, err := dyn.Resource(gvr).Namespace(ns).Update(ctx, g, metav1.UpdateOptions{})
			require.NoError(t, err)
			testutil.EventuallyWithin(t, time.Minute, func() bool {
				typed, err := gadgets.Lister().Namespace(ns).Get("g-00")
				if err != nil || typed.ResourceVersion != updated.GetResourceVersion() || typed.Spec.Size != int(size) {
					return false
				}
				u, err := untyped.Lister().Namespace(ns).Get("g-00")
				return err == nil && apiequality.Semantic.DeepEqual(updated.Object, u.Object)
			}, "the update arrives through CBOR watches")
			assert.Equal(t, 10, len(maps.Lister().List(labels.Everything())))

			cbor := map[string]int{}
			for _, ex := range w.exchanges() {
				if ex.status == 200 && (pathEndsWithURL(ex.url, "configmaps") || pathEndsWithURL(ex.url, "gadgets")) && strings.HasPrefix(ex.contentType, "application/cbor") {
					cbor[ex.url[strings.LastIndex(ex.url, "/")+1:strings.Index(ex.url+"?", "?")]]++
				}
			}
			assert.Positive(t, cbor["configmaps"], "config maps served as CBOR: %v", w.exchanges())
			assert.Positive(t, cbor["gadgets"], "gadgets served as CBOR: %v", w.exchanges())
		})
	}
}
