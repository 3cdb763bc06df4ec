package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
)

// Secrets is a Provider of the clusters declared by kubeconfig Secrets in
// a namespace of a hub cluster, as multicluster-runtime's kubeconfig
// provider does: each Secret that holds a kubeconfig under Key attaches a
// cluster named after the Secret, a changed kubeconfig attaches it again,
// and a deleted Secret detaches it.
type Secrets struct {
	// Hub is the cluster that holds the Secrets.
	Hub Cluster
	// Namespace holds the Secrets; required.
	Namespace string
	// LabelSelector, if set, selects the Secrets that declare clusters.
	LabelSelector string
	// Key is the data key of the kubeconfig; "" means "kubeconfig".
	Key string
	// Connect, if set, turns a Secret's kubeconfig into a Cluster, for
	// clients of one's own; nil means the kubeconfig's current context,
	// through a rest.Config.
	Connect func(name string, kubeconfig []byte) (Cluster, error)
	// OnError, if set, receives the errors of Secrets that declare no
	// usable cluster and of clusters that could not be attached; nil
	// logs them.
	OnError func(error)
}

// Run follows the Secrets and attaches and detaches their clusters until
// ctx ends. It fails at once if the hub cannot serve Secrets (403
// Forbidden, for instance).
func (s *Secrets) Run(ctx context.Context, t Target) error {
	if s.Namespace == "" {
		return errors.New("fleet: Secrets: no Namespace")
	}
	factory := informers.NewFactoryWith(s.Hub.Client, informers.FactoryOptions{RESTConfig: s.Hub.RESTConfig, Server: s.Hub.Server, Tuning: informers.Tuning{Namespace: informers.Set(s.Namespace)}})
	secrets := informers.InformerWith(factory, informers.Options[*corev1.Secret]{LabelSelector: s.LabelSelector})
	f := &secretFollower{s: s, t: t, ctx: ctx, kubeconfigs: make(map[string][]byte)}
	if _, err := secrets.AddHandler(informers.HandlerFuncs[*corev1.Secret]{
		OnAdd:    func(sec *corev1.Secret, _ bool) { f.set(sec) },
		OnUpdate: func(_, sec *corev1.Secret) { f.set(sec) },
		OnDelete: func(d informers.Deleted[*corev1.Secret]) { f.remove(d.Key.Name) },
	}); err != nil {
		return err
	}
	factory.Start(ctx)
	err := informers.WaitForSync(ctx, factory)
	if err == nil {
		<-ctx.Done()
	}
	return errors.Join(err, factory.Shutdown(context.WithoutCancel(ctx)))
}

// secretFollower attaches the clusters of Secrets; its methods are called
// from the Secrets handler's goroutine, one at a time.
type secretFollower struct {
	s   *Secrets
	t   Target
	ctx context.Context

	mu          sync.Mutex
	kubeconfigs map[string][]byte // of the clusters attached, by name
}

func (f *secretFollower) set(sec *corev1.Secret) {
	name, kubeconfig := sec.Name, sec.Data[f.key()]
	f.mu.Lock()
	prev, attached := f.kubeconfigs[name]
	f.mu.Unlock()
	if attached && bytes.Equal(prev, kubeconfig) {
		return
	}
	if attached {
		f.remove(name)
	}
	if len(kubeconfig) == 0 {
		f.report(fmt.Errorf("fleet: Secret %s/%s has no key %q", sec.Namespace, name, f.key()))
		return
	}
	c, err := f.connect(name, kubeconfig)
	if err != nil {
		f.report(fmt.Errorf("fleet: Secret %s/%s: %w", sec.Namespace, name, err))
		return
	}
	if err := f.t.Attach(f.ctx, name, c); err != nil {
		f.report(err)
		return
	}
	f.mu.Lock()
	f.kubeconfigs[name] = kubeconfig
	f.mu.Unlock()
}

func (f *secretFollower) remove(name string) {
	f.mu.Lock()
	_, attached := f.kubeconfigs[name]
	delete(f.kubeconfigs, name)
	f.mu.Unlock()
	if attached {
		if err := f.t.Detach(f.ctx, name); err != nil {
			f.report(err)
		}
	}
}

func (f *secretFollower) key() string {
	if f.s.Key == "" {
		return "kubeconfig"
	}
	return f.s.Key
}

func (f *secretFollower) connect(name string, kubeconfig []byte) (Cluster, error) {
	if f.s.Connect != nil {
		return f.s.Connect(name, kubeconfig)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return Cluster{}, err
	}
	return Cluster{RESTConfig: cfg}, nil
}

func (f *secretFollower) report(err error) {
	if f.s.OnError != nil {
		f.s.OnError(err)
		return
	}
	klog.FromContext(f.ctx).Error(err, "Cluster from a Secret not attached")
}
