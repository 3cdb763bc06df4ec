package benchfixtures_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// jsonServerGet returns the status and body of a GET of path.
func jsonServerGet(t *testing.T, s *bf.JSONServer, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.Config().Host+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// An application server's pages are ApplicationLists, as encoding/json
// encodes them, chained by continue tokens; discovery lists applications
// at their group version.
func TestJSONServerApplications(t *testing.T) {
	const count, pageSize = 25, 10
	s, err := bf.NewApplicationServer(count, pageSize, false)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	assert.Equal(t, bf.ApplicationResource, s.Resource())
	assert.Equal(t, "Application", s.Kind())

	total := 0
	for page, first := 0, 0; first < count; page, first = page+1, first+pageSize {
		want := bf.ApplicationList{TypeMeta: metav1.TypeMeta{Kind: "ApplicationList", APIVersion: bf.ApplicationGV.String()}}
		want.ResourceVersion = strconv.Itoa(1000 + count)
		for i := first; i < min(first+pageSize, count); i++ {
			a := bf.NewApplication(i, 1)
			a.ManagedFields = nil
			want.Items = append(want.Items, *a)
		}
		if first+pageSize < count {
			want.Continue = strconv.Itoa(page + 1)
		}
		wantBody, err := json.Marshal(&want)
		require.NoError(t, err)
		path := "/apis/argoproj.io/v1alpha1/namespaces/team-1/applications"
		if page > 0 {
			path += "?continue=" + strconv.Itoa(page)
		}
		status, body := jsonServerGet(t, s, path)
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, string(wantBody), string(body), "page %d", page)
		total += len(body)
	}
	assert.Equal(t, total, s.Bytes())

	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	res, err := cs.Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1")
	require.NoError(t, err)
	require.Len(t, res.APIResources, 1)
	assert.Equal(t, metav1.APIResource{Name: "applications", SingularName: "application", Namespaced: true, Kind: "Application",
		Verbs: metav1.Verbs{"get", "list", "watch"}}, res.APIResources[0])
}

// A server of a core resource serves it under /api/v1, in all
// namespaces and in any one.
func TestJSONServerCoreGroup(t *testing.T) {
	const count, pageSize = 5, 3
	s, err := bf.NewJSONServer(corev1.SchemeGroupVersion.WithResource("secrets"), "Secret", true, count, pageSize, func(i int) any { return bf.Secret(i) })
	require.NoError(t, err)
	t.Cleanup(s.Close)
	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)

	first, err := cs.CoreV1().Secrets("").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, first.Items, pageSize)
	assert.Equal(t, bf.Secret(0).Data, first.Items[0].Data)
	rest, err := cs.CoreV1().Secrets("team-01").List(t.Context(), metav1.ListOptions{Continue: first.Continue})
	require.NoError(t, err)
	require.Len(t, rest.Items, count-pageSize)
	assert.Equal(t, bf.Secret(count-1).Name, rest.Items[count-pageSize-1].Name)
	assert.Empty(t, rest.Continue)

	res, err := cs.Discovery().ServerResourcesForGroupVersion("v1")
	require.NoError(t, err)
	require.Len(t, res.APIResources, 1)
	assert.Equal(t, "secrets", res.APIResources[0].Name)
	assert.Equal(t, "Secret", res.APIResources[0].Kind)
	assert.True(t, res.APIResources[0].Namespaced)
}

// A server of a cluster-scoped resource embeds raw items as they are and
// serves no namespaced path.
func TestJSONServerClusterScoped(t *testing.T) {
	crds, err := bf.CRDs(3)
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	s, err := bf.NewJSONServer(gvr, "CustomResourceDefinition", false, len(crds), 10, func(i int) any { return json.RawMessage(crds[i]) })
	require.NoError(t, err)
	t.Cleanup(s.Close)

	status, body := jsonServerGet(t, s, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
	require.Equal(t, http.StatusOK, status)
	for _, crd := range crds {
		assert.True(t, bytes.Contains(body, crd))
	}
	status, _ = jsonServerGet(t, s, "/apis/apiextensions.k8s.io/v1/namespaces/default/customresourcedefinitions")
	assert.Equal(t, http.StatusNotFound, status)

	dyn, err := dynamic.NewForConfig(s.Config())
	require.NoError(t, err)
	l, err := dyn.Resource(gvr).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, "CustomResourceDefinitionList", l.GetKind())
	require.Len(t, l.Items, len(crds))
	assert.Equal(t, "CustomResourceDefinition", l.Items[0].GetKind())

	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	res, err := cs.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	require.NoError(t, err)
	require.Len(t, res.APIResources, 1)
	assert.Equal(t, "customresourcedefinitions", res.APIResources[0].Name)
	assert.False(t, res.APIResources[0].Namespaced)
}

// A JSON server refuses, as Not Acceptable, requests that accept neither
// whole objects nor JSON, and answers those that accept both among
// others.
func TestJSONServerRefusesProjections(t *testing.T) {
	s, err := bf.NewJSONServer(corev1.SchemeGroupVersion.WithResource("secrets"), "Secret", true, 2, 10, func(i int) any { return bf.Secret(i) })
	require.NoError(t, err)
	t.Cleanup(s.Close)
	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	get := func(accept string) error {
		return cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/secrets").SetHeader("Accept", accept).Do(t.Context()).Error()
	}
	for _, accept := range []string{
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
		"application/vnd.kubernetes.protobuf",
	} {
		err := get(accept)
		assert.True(t, apierrors.IsNotAcceptable(err), "%s: %v", accept, err)
	}
	for _, accept := range []string{
		"application/json",
		"application/vnd.kubernetes.protobuf,application/json",
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
		"application/json, */*",
	} {
		assert.NoError(t, get(accept), accept)
	}
}
