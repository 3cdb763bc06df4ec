package integration

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

func pathEndsWithURL(raw, resource string) bool {
	u, err := url.Parse(raw)
	return err == nil && pathEndsWith(u.Path, resource)
}

// Built-in types travel as protobuf, whether the factory has a clientset
// or a rest.Config: decoding dominates an informer's CPU and JSON costs
// several times more.
func TestProtobufOnTheWire(t *testing.T) {
	for _, viaConfig := range []bool{false, true} {
		name := "clientset"
		if viaConfig {
			name = "rest.Config"
		}
		t.Run(name, func(t *testing.T) {
			testutil.NoLeaks(t)
			env := testenv.Shared(t)
			ns := testutil.Namespace(t, clientset(t, env.Config()))
			createConfigMaps(t, env, ns, 5)
			w, cfg := recorded(env)
			opts := informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}}
			var f *informers.Factory
			if viaConfig {
				opts.RESTConfig = cfg
				f = informers.NewFactoryWith(nil, opts)
			} else {
				f = informers.NewFactoryWith(clientset(t, cfg), opts)
			}
			cms := informers.Informer[*corev1.ConfigMap](f)
			deploys := informers.Informer[*appsv1.Deployment](f)
			testutil.StartFactory(t, f)
			require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), f))
			assert.Equal(t, 5, cms.Lister().Len())
			assert.Zero(t, deploys.Lister().Len())
			checked := 0
			for _, ex := range w.exchanges() {
				if ex.status != 200 || !(pathEndsWithURL(ex.url, "configmaps") || pathEndsWithURL(ex.url, "deployments")) {
					continue
				}
				assert.True(t, strings.HasPrefix(ex.contentType, "application/vnd.kubernetes.protobuf"), "%s: %s", ex.url, ex.contentType)
				checked++
			}
			assert.GreaterOrEqual(t, checked, 2)
		})
	}
}
