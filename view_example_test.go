package informers_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubetyped/informers"
)

// PodPlacement is a view of pods: the fields a controller that places
// pods reads, under the JSON names of corev1.Pod. The cache holds these
// and nothing else of each pod.
type PodPlacement struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase corev1.PodPhase `json:"phase"`
	} `json:"status"`
}

// DeepCopyObject makes PodPlacement a runtime.Object; ViewMeta provides
// the rest of what an informer's objects implement.
func (p *PodPlacement) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

func ExampleViewMeta() {
	clientset := fake.NewClientset(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "app", Image: "registry/web:1.2",
			Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}}, // not in the view: never cached
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	factory := informers.NewFactory(clientset)
	// A view is no type of the scheme: it is asked for by its resource.
	pods := informers.InformerWith(factory, informers.Options[*PodPlacement]{
		Resource: corev1.SchemeGroupVersion.WithResource("pods"),
	})
	factory.Start(ctx)
	defer factory.Shutdown(ctx)
	if err := informers.WaitForSync(ctx, factory); err != nil {
		fmt.Println(err)
		return
	}
	p, err := pods.Lister().Namespace("default").Get("web-0")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name, p.Labels["app"], p.Spec.NodeName, p.Spec.Containers[0].Image, p.Status.Phase)
	// Output: web-0 web node-1 registry/web:1.2 Running
}

// A view that names a field its resource's type has not is refused when
// it is asked for, with the field named.
func ExampleViewMeta_invalid() {
	factory := informers.NewFactory(fake.NewClientset())
	pods := informers.InformerWith(factory, informers.Options[*badPlacement]{
		Resource: corev1.SchemeGroupVersion.WithResource("pods"),
	})
	fmt.Println(pods.LastError())
	// Output: informers: Informer[*informers_test.badPlacement]: pods.v1: view *informers_test.badPlacement of *v1.Pod: badPlacement.Spec.Node: v1.PodSpec has no field "node"
}

// badPlacement names spec.node, which pods do not have: corev1.PodSpec
// calls it nodeName.
type badPlacement struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Node string `json:"node"`
	} `json:"spec"`
}

func (p *badPlacement) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

func ExampleDeepCopyView() {
	p := &PodPlacement{ViewMeta: informers.ViewMeta{Name: "web-0", Labels: map[string]string{"app": "web"}}}
	c := p.DeepCopyObject().(*PodPlacement)
	c.Labels["app"] = "db"
	fmt.Println(p.Labels["app"], c.Labels["app"])
	// Output: web db
}
