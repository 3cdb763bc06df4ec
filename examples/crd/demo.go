package main

import (
	"context"
	"log"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// demoNamespace holds the demo's greetings; every cluster has it.
const demoNamespace = "default"

// demo plays what a user would do with kubectl, a step every two seconds,
// so that the controller has something to do on an empty cluster. It is
// not part of the controller.
func demo(ctx context.Context, dyn dynamic.Interface, logger *log.Logger) {
	client := dyn.Resource(greetings).Namespace(demoNamespace)
	create := func(name, whom string) func() error {
		return func() error {
			_, err := client.Create(ctx, newGreeting(demoNamespace, name, whom), metav1.CreateOptions{})
			return err
		}
	}
	steps := []struct {
		say string
		do  func() error
	}{
		{"create greeting hello, for world", create("hello", "world")},
		{"create greeting team, for gophers", create("team", "gophers")},
		{"change hello's spec.name to Kubernetes", func() error {
			_, err := client.Patch(ctx, "hello", types.MergePatchType, []byte(`{"spec":{"name":"Kubernetes"}}`), metav1.PatchOptions{})
			return err
		}},
		{"delete greeting team", func() error { return client.Delete(ctx, "team", metav1.DeleteOptions{}) }},
		{"delete greeting hello", func() error { return client.Delete(ctx, "hello", metav1.DeleteOptions{}) }},
	}
	for _, step := range steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		logger.Printf("demo: %s", step.say)
		if err := step.do(); err != nil && ctx.Err() == nil && !apierrors.IsAlreadyExists(err) {
			logger.Printf("demo: %v", err)
		}
	}
	logger.Printf("demo: done; the controller runs on until Ctrl-C")
}
