package main

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers"
)

// podView is what a controller that places and watches pods reads of
// them: its metadata (name, namespace, labels, owner references), the
// node it runs on, its containers' names and images, its phase and its
// conditions. The informers-view implementation caches pods as these.
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

func (v *podView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }

// metadataView is the view of any other resource: its metadata alone.
type metadataView struct {
	informers.ViewMeta `json:"metadata"`
}

func (v *metadataView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }

// viewInformer returns the informer of f of views of r: podView for
// pods, metadataView for any other resource.
func viewInformer(f *informers.Factory, r resource) (informers.AnyInformer, error) {
	if r.gvr == corev1.SchemeGroupVersion.WithResource("pods") {
		return informers.InformerWith(f, informers.Options[*podView]{Resource: r.gvr}), nil
	}
	return informers.InformerWith(f, informers.Options[*metadataView]{Resource: r.gvr}), nil
}
