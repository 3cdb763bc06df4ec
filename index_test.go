package informers_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

func byNode(p *corev1.Pod) []string {
	if p.Spec.NodeName == "" {
		return nil
	}
	return []string{p.Spec.NodeName}
}

func onNode(ns, name, node string) *corev1.Pod {
	p := pod(ns, name, nil)
	p.Spec.NodeName = node
	return p
}

// Index contents follow updates that move objects between values and
// deletes, leaving no stale entries, whether the index was added before or
// after the informer started.
func TestIndexFollowsChanges(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("addedAfterStart=%v", late), func(t *testing.T) {
			src := newPodSource()
			mustAdd(t, src, onNode("a", "x", "n1"), onNode("a", "y", "n1"), onNode("b", "z", "n2"), pod("b", "pending", nil))
			opts := informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}}
			if !late {
				opts.Indexers = map[string]informers.IndexFunc[*corev1.Pod]{"node": byNode}
			}
			inf, rec := startRecording(t, src.ListWatch(""), opts)
			var ix *informers.Index[*corev1.Pod]
			var err error
			if late {
				ix, err = inf.AddIndex("node", byNode)
				require.NoError(t, err)
			} else {
				ix, err = inf.AddIndex("node", byNode)
				require.Error(t, err, "name taken")
				ix, err = inf.AddIndex("node2", byNode)
				require.NoError(t, err)
			}
			assert.Equal(t, []string{"a/x", "a/y"}, names(ix.List("n1")))
			assert.Equal(t, []string{"b/z"}, names(ix.List("n2")))

			_, err = src.Update(onNode("a", "x", "n2")) // moves
			require.NoError(t, err)
			_, err = src.Update(onNode("b", "pending", "n1")) // joins
			require.NoError(t, err)
			_, err = src.Delete("a", "y") // leaves
			require.NoError(t, err)
			testutil.Eventually(t, func() bool { return len(rec.List()) == 7 }, "events applied")

			assert.Equal(t, []string{"b/pending"}, names(ix.List("n1")))
			assert.Equal(t, []string{"a/x", "b/z"}, names(ix.List("n2")))
			vals := ix.Values()
			slices.Sort(vals)
			assert.Equal(t, []string{"n1", "n2"}, vals)
			assert.Equal(t, names(ix.List("n2")), names(slices.Collect(ix.All("n2"))))
			byName, err := inf.Lister().ByIndex(ix.Name(), "n2")
			require.NoError(t, err)
			assert.Equal(t, []string{"a/x", "b/z"}, names(byName))

			_, err = src.Delete("b", "pending")
			require.NoError(t, err)
			testutil.Eventually(t, func() bool { return len(ix.List("n1")) == 0 }, "emptied")
			assert.Equal(t, []string{"n2"}, ix.Values(), "empty values disappear")
			_, err = inf.Lister().ByIndex("nope", "n1")
			require.Error(t, err)
		})
	}
}

func TestIndexFuncPanic(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, onNode("a", "x", "n1"), onNode("a", "boom", "n1"))
	var reported []error
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(err error) { reported = append(reported, err) })},
		Indexers: map[string]informers.IndexFunc[*corev1.Pod]{"node": func(p *corev1.Pod) []string {
			if p.Name == "boom" {
				panic("bad index")
			}
			return byNode(p)
		}},
	})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	objs, err := inf.Lister().ByIndex("node", "n1")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/x"}, names(objs), "stored but not indexed")
	assert.Equal(t, 2, inf.Lister().Len())
	require.Len(t, reported, 1)
	var ixErr *informers.IndexError
	require.ErrorAs(t, reported[0], &ixErr)
	assert.Equal(t, "a/boom", ixErr.Key.String())
}

func TestNamespaceIndexIsTheStores(t *testing.T) {
	require.Equal(t, informers.StoreNamespaceIndex, informers.NamespaceIndex)
}
