package main

import (
	"context"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// demo plays what a user would do with kubectl, a step every two seconds,
// so that the controller has something to do on an empty cluster. It is
// not part of the controller.
func demo(ctx context.Context, cs kubernetes.Interface, logger *log.Logger, from, to string) {
	secrets := cs.CoreV1().Secrets(from)
	secret := func(name, value string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mirrorLabel: "true"}},
			Data:       map[string][]byte{"value": []byte(value)},
		}
	}
	steps := []struct {
		say string
		do  func() error
	}{
		{"create namespace " + from, func() error { return createNamespace(ctx, cs, from) }},
		{"create secret db-password labelled mirror=true; namespace " + to + " does not exist yet, so the controller retries with backoff", func() error {
			_, err := secrets.Create(ctx, secret("db-password", "hunter2"), metav1.CreateOptions{})
			return err
		}},
		{"create namespace " + to, func() error { return createNamespace(ctx, cs, to) }},
		{"change db-password's data", func() error {
			_, err := secrets.Patch(ctx, "db-password", types.MergePatchType, []byte(`{"stringData":{"value":"correct horse"}}`), metav1.PatchOptions{})
			return err
		}},
		{"create secret api-key labelled mirror=true", func() error {
			_, err := secrets.Create(ctx, secret("api-key", "s3cr3t"), metav1.CreateOptions{})
			return err
		}},
		{"remove the label from db-password", func() error {
			_, err := secrets.Patch(ctx, "db-password", types.MergePatchType, []byte(`{"metadata":{"labels":{"mirror":null}}}`), metav1.PatchOptions{})
			return err
		}},
		{"delete the mirror " + to + "/api-key by hand", func() error {
			return cs.CoreV1().Secrets(to).Delete(ctx, "api-key", metav1.DeleteOptions{})
		}},
		{"delete secret api-key", func() error { return secrets.Delete(ctx, "api-key", metav1.DeleteOptions{}) }},
	}
	for _, step := range steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		logger.Printf("demo: %s", step.say)
		if err := step.do(); err != nil && ctx.Err() == nil {
			logger.Printf("demo: %v", err)
		}
	}
	logger.Printf("demo: done; the controller runs on until Ctrl-C")
}

func createNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
