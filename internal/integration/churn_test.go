package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// selectedLabel is the label that selected informers select on, and that
// a churner flips.
const selectedLabel = "fault-matrix/selected"

// churner changes the objects of one resource in a namespace (config maps,
// or custom resources; see churnTarget) on its own goroutine until
// stopped: it creates, updates, deletes, deletes and recreates under the
// same name (a new UID), and flips selectedLabel, on names drawn at
// random from a fixed set. Writes that fail (the server is down, the name
// is taken) are part of the churn: it carries on.
type churner struct {
	target churnTarget
	names  []string
	rng    *rand.Rand

	exists  map[string]bool // as far as the last write to each name told
	writes  atomic.Int64    // writes that succeeded
	stop    context.CancelFunc
	stopped sync.WaitGroup
}

// churnNames is how many names a churner draws from; it creates the first
// churnStart of them before it starts.
const churnNames, churnStart = 140, 120

// startChurn creates the first config maps of namespace ns, then churns
// them.
func startChurn(ctx context.Context, cs kubernetes.Interface, ns string, seed uint64) (*churner, error) {
	return startChurnOf(ctx, configMapChurn{cs, ns}, seed)
}

// startChurnOf creates target's first objects, then churns them.
func startChurnOf(ctx context.Context, target churnTarget, seed uint64) (*churner, error) {
	c := &churner{target: target, rng: rand.New(rand.NewPCG(seed, seed)), exists: map[string]bool{}}
	for i := range churnNames {
		c.names = append(c.names, fmt.Sprintf("%s-%03d", target.prefix(), i))
	}
	err := parallel(churnStart, 8, func(i int) error {
		return target.create(ctx, c.names[i], i%2 == 0)
	})
	if err != nil {
		return nil, fmt.Errorf("creating the first objects: %w", err)
	}
	for _, name := range c.names[:churnStart] {
		c.exists[name] = true
	}
	ctx, c.stop = context.WithCancel(ctx)
	c.stopped.Go(func() { c.run(ctx) })
	return c, nil
}

// Stop stops the churn and waits for its last write to return.
func (c *churner) Stop() {
	c.stop()
	c.stopped.Wait()
}

// Writes returns how many writes have succeeded.
func (c *churner) Writes() int64 { return c.writes.Load() }

// errorPause paces writes while they fail, so that a server that is down
// is not asked thousands of times a second; it is not synchronisation.
const errorPause = 20 * time.Millisecond

func (c *churner) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.step(ctx); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(errorPause):
			}
		}
	}
}

// step makes one change, to a name drawn at random: it creates the object
// if it is missing, and otherwise updates it, flips its label, deletes it
// or deletes and recreates it.
func (c *churner) step(ctx context.Context) error {
	name := c.names[c.rng.IntN(len(c.names))]
	var err error
	switch p := c.rng.IntN(100); {
	case !c.exists[name]:
		err = c.create(ctx, name, c.rng.IntN(2) == 0)
	case p < 35:
		err = c.patch(ctx, name, c.target.contentPatch(c.rng.Uint32()))
	case p < 60:
		err = c.patch(ctx, name, fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, selectedLabel, yesNo(c.rng.IntN(2) == 0)))
	case p < 75:
		err = c.delete(ctx, name)
	default:
		if err = c.delete(ctx, name); err == nil {
			err = c.create(ctx, name, c.rng.IntN(2) == 0)
		}
	}
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (c *churner) create(ctx context.Context, name string, selected bool) error {
	return c.done(name, c.target.create(ctx, name, selected), true)
}

func (c *churner) patch(ctx context.Context, name, patch string) error {
	return c.done(name, c.target.patch(ctx, name, []byte(patch)), true)
}

func (c *churner) delete(ctx context.Context, name string) error {
	return c.done(name, c.target.delete(ctx, name), false)
}

// done records the outcome of a write to name that, if it succeeded,
// left the object existing or not.
func (c *churner) done(name string, err error, exists bool) error {
	switch {
	case err == nil:
		c.exists[name] = exists
		c.writes.Add(1)
	case apierrors.IsAlreadyExists(err):
		c.exists[name] = true
	case apierrors.IsNotFound(err):
		c.exists[name] = false
	}
	return err
}

// churnTarget is the resource a churner writes, in one namespace.
type churnTarget interface {
	// prefix starts the names of the objects.
	prefix() string
	// create creates an object of the name, with selectedLabel "yes" if
	// selected, else "no".
	create(ctx context.Context, name string, selected bool) error
	// patch applies a merge patch.
	patch(ctx context.Context, name string, patch []byte) error
	delete(ctx context.Context, name string) error
	// contentPatch is a merge patch that sets the object's content to v.
	contentPatch(v uint32) string
}

// configMapChurn churns the config maps of a namespace.
type configMapChurn struct {
	cs kubernetes.Interface
	ns string
}

func (configMapChurn) prefix() string { return "cm" }

func (c configMapChurn) create(ctx context.Context, name string, selected bool) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{selectedLabel: yesNo(selected)}},
		Data:       map[string]string{"v": "0"},
	}
	_, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func (c configMapChurn) patch(ctx context.Context, name string, patch []byte) error {
	_, err := c.cs.CoreV1().ConfigMaps(c.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (c configMapChurn) delete(ctx context.Context, name string) error {
	return c.cs.CoreV1().ConfigMaps(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (configMapChurn) contentPatch(v uint32) string { return fmt.Sprintf(`{"data":{"v":"%d"}}`, v) }

// gadgetChurn churns the gadgets (see createGadgetCRDIn) of group version
// gv in a namespace, through the dynamic client.
type gadgetChurn struct {
	dyn dynamic.Interface
	gv  schema.GroupVersion
	ns  string
}

func (gadgetChurn) prefix() string { return "gadget" }

func (c gadgetChurn) resource() dynamic.ResourceInterface {
	return c.dyn.Resource(c.gv.WithResource("gadgets")).Namespace(c.ns)
}

func (c gadgetChurn) create(ctx context.Context, name string, selected bool) error {
	g := gadget(c.ns, name, 0)
	g.SetAPIVersion(c.gv.String())
	g.SetLabels(map[string]string{selectedLabel: yesNo(selected)})
	_, err := c.resource().Create(ctx, g, metav1.CreateOptions{})
	return err
}

func (c gadgetChurn) patch(ctx context.Context, name string, patch []byte) error {
	_, err := c.resource().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (c gadgetChurn) delete(ctx context.Context, name string) error {
	return c.resource().Delete(ctx, name, metav1.DeleteOptions{})
}

func (gadgetChurn) contentPatch(v uint32) string { return fmt.Sprintf(`{"spec":{"size":%d}}`, v) }
