package main

import (
	"context"
	"log"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers/examples/internal/demo"
)

// play plays what a user would do with kubectl, a step every two seconds,
// so that the controller has something to do on an empty cluster. It is
// not part of the controller.
func play(ctx context.Context, cs kubernetes.Interface, logger *log.Logger, team string) {
	first, second := "teams-"+team+"-1", "teams-"+team+"-2"
	demo.Play(ctx, logger, []demo.Step{
		{Say: "create namespace " + first + " labelled team=" + team + ", with config map settings", Do: func() error {
			return createNamespace(ctx, cs, first, map[string]string{"team": team}, "settings")
		}},
		{Say: "create namespace " + second + ", unlabelled, with config maps flags and limits", Do: func() error {
			return createNamespace(ctx, cs, second, nil, "flags", "limits")
		}},
		{Say: "label " + second + " team=" + team + ": it enters", Do: func() error { return setTeam(ctx, cs, second, `"`+team+`"`) }},
		{Say: "remove the label of " + first + ": it leaves", Do: func() error { return setTeam(ctx, cs, first, "null") }},
		{Say: "delete config map " + second + "/flags", Do: func() error {
			return cs.CoreV1().ConfigMaps(second).Delete(ctx, "flags", metav1.DeleteOptions{})
		}},
	})
}

func createNamespace(ctx context.Context, cs kubernetes.Interface, name string, labels map[string]string, configMaps ...string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, cm := range configMaps {
		_, err := cs.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// setTeam sets a namespace's team label to value, JSON: a quoted string,
// or null to remove it.
func setTeam(ctx context.Context, cs kubernetes.Interface, ns, value string) error {
	_, err := cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":`+value+`}}}`), metav1.PatchOptions{})
	return err
}
