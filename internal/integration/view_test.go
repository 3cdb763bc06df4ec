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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// podView is what a scheduler-like controller reads of a pod.
type podView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase      corev1.PodPhase `json:"phase"`
		Conditions []struct {
			Type   corev1.PodConditionType `json:"type"`
			Status corev1.ConditionStatus  `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

func (p *podView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

// projectPod returns the view of pod, as encoding/json projects it.
func projectPod(t *testing.T, pod *corev1.Pod) *podView {
	t.Helper()
	b, err := json.Marshal(pod)
	require.NoError(t, err)
	v := &podView{}
	require.NoError(t, json.Unmarshal(b, v))
	return v
}

// A view of pods through a Factory, beside the informer of the full type:
// both sync the same pods, from protobuf, follow updates of spec, labels
// and status and deletes, and every view equals the view of the full pod
// cached beside it; a Tracker of views sees the controller's writes.
func TestViewInformer(t *testing.T) {
	env, cs, ns, ctx := sharedServer(t, 3*time.Minute)
	const pods = 300
	require.NoError(t, parallel(pods, 16, func(i int) error {
		p := testPod(ns, fmt.Sprintf("pod-%d", i))
		p.Annotations = map[string]string{"note": strings.Repeat("x", 100)}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	}))

	w, cfg := recorded(env)
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	views := informers.InformerWith(f, informers.Options[*podView]{Resource: corev1.SchemeGroupVersion.WithResource("pods")})
	full := informers.Informer[*corev1.Pod](f)
	require.NoError(t, views.LastError())
	require.NoError(t, full.LastError())
	viewsSeen, fullSeen := newTracker[*podView](), newTracker[*corev1.Pod]()
	_, err := views.AddHandler(viewsSeen)
	require.NoError(t, err)
	_, err = full.AddHandler(fullSeen)
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	assert.Equal(t, pods, views.Lister().Len())
	assert.True(t, views.UsesWatchList(), "a view streams its initial state as the full type does")

	// The same changes on many pods: deletes, label and image updates, and
	// status written as a kubelet writes it.
	require.NoError(t, parallel(pods, 16, func(i int) error {
		name := fmt.Sprintf("pod-%d", i)
		switch i % 4 {
		case 0:
			return ignoreRaces(cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}))
		case 1:
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Labels["tier"] = "front"
			p.Spec.Containers[0].Image = "registry.invalid/app:2"
			_, err = cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
			return ignoreRaces(err)
		case 2:
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, Message: "ready"}}
			_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return ignoreRaces(err)
		}
		return nil
	}))
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		server := serverPods(t, cs, ns)
		okViews, _ := viewsSeen.converged(server)
		okFull, _ := fullSeen.converged(server)
		return okViews && okFull && views.Lister().Len() == len(server) && full.Lister().Len() == len(server)
	}, "the view and the full informer follow the server")
	for p := range full.Lister().All() {
		v, err := views.Lister().Namespace(ns).Get(p.Name)
		require.NoError(t, err)
		want := projectPod(t, p)
		require.Equal(t, want, v, p.Name)
	}
	running, err := views.Lister().Namespace(ns).Get("pod-2")
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, running.Status.Phase)
	assert.Equal(t, corev1.ConditionTrue, running.Status.Conditions[0].Status)
	front, err := views.Lister().Namespace(ns).Get("pod-1")
	require.NoError(t, err)
	assert.Equal(t, "front", front.Labels["tier"])
	assert.Equal(t, "registry.invalid/app:2", front.Spec.Containers[0].Image)

	for _, x := range w.exchanges() {
		if strings.Contains(x.url, "/pods?") && x.status == 200 {
			assert.True(t, strings.HasPrefix(x.contentType, "application/vnd.kubernetes.protobuf"), "%s: %s", x.url, x.contentType)
		}
	}

	// A Tracker of views: a create shows once the cache has it, a delete
	// once it is gone or marked for deletion.
	tracker := informers.NewTracker(views, 30*time.Second)
	key := types.NamespacedName{Namespace: ns, Name: "created"}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, testPod(ns, "created"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, tracker.Wrote(key, &podView{ViewMeta: informers.ViewMetaOf(created)}))
	got, err := tracker.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, created.UID, got.UID)
	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "created", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	tracker.Deleted(key, got)
	require.NoError(t, tracker.Wait(ctx, key))
	if p, err := views.Lister().Namespace(ns).Get("created"); err == nil {
		assert.NotNil(t, p.DeletionTimestamp, "the cache holds the pod only marked for deletion")
	}
}

// gadgetView is a view of gadgets, a custom resource the scheme does not
// know: its kind comes from discovery, its objects from JSON.
type gadgetView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Size int64 `json:"size"`
	} `json:"spec"`
}

func (g *gadgetView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(g) }

// A view of a custom resource syncs and follows its objects, decoded from
// JSON with the kind discovery tells.
func TestViewOfCustomResource(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ns := testutil.Namespace(t, admin)
	dyn, err := dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	ctx := testutil.Context(t, 2*time.Minute)
	const group = "views.example.com"
	createGadgetCRDIn(t, dyn, ctx, group)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	for i := range 3 {
		g := gadget(ns, fmt.Sprintf("g%d", i), int64(i))
		g.SetAPIVersion(group + "/v1")
		_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: env.Config(), Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	views := informers.InformerWith(f, informers.Options[*gadgetView]{Resource: gvr})
	require.NoError(t, views.LastError())
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	require.Equal(t, 3, views.Lister().Len())
	g, err := views.Lister().Namespace(ns).Get("g2")
	require.NoError(t, err)
	assert.Equal(t, int64(2), g.Spec.Size)

	u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "g1", metav1.GetOptions{})
	require.NoError(t, err)
	u.Object["spec"] = map[string]any{"size": int64(7)}
	_, err = dyn.Resource(gvr).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, dyn.Resource(gvr).Namespace(ns).Delete(ctx, "g0", metav1.DeleteOptions{}))
	testutil.EventuallyWithin(t, 30*time.Second, func() bool {
		g, err := views.Lister().Namespace(ns).Get("g1")
		return err == nil && g.Spec.Size == 7 && views.Lister().Len() == 2
	}, "the update and the delete arrived")
}
