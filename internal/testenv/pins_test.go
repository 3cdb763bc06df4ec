package testenv

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pins are one per minor version, oldest first, the newest the
// default, each with every k8s.io staging module replaced by the version
// that matches its k8s.io/kubernetes.
func TestPins(t *testing.T) {
	ps, err := pins()
	require.NoError(t, err)
	versions, err := KubeVersions()
	require.NoError(t, err)
	require.Len(t, versions, len(ps))
	require.GreaterOrEqual(t, len(ps), 4, "1.34 to 1.37 at least")
	assert.Equal(t, "1.34", versions[0], "the oldest supported server")
	newest, err := newestPin()
	require.NoError(t, err)
	assert.Equal(t, newest.minor, versions[len(versions)-1], "controlplane.mod pins the newest")

	replace := regexp.MustCompile(`(?m)^\s*(k8s\.io/[a-z0-9-]+) => (k8s\.io/[a-z0-9-]+) (v\S+)$`)
	for i, p := range ps {
		if i > 0 {
			assert.True(t, ps[i-1].kube.LessThan(p.kube), "%s after %s", p.name, ps[i-1].name)
		}
		staging := fmt.Sprintf("v0.%d.%d", p.kube.Minor(), p.kube.Patch())
		replaced := replace.FindAllStringSubmatch(string(p.mod), -1)
		assert.GreaterOrEqual(t, len(replaced), 30, "%s replaces the staging modules", p.name)
		for _, r := range replaced {
			assert.Equal(t, r[1], r[2], "%s replaces %s by itself", p.name, r[1])
			assert.Equal(t, staging, r[3], "%s: %s matches kubernetes v%s", p.name, r[1], p.kube)
		}
		assert.Contains(t, string(p.sum), "k8s.io/kubernetes v"+p.kube.String()+" h1:", "%s has its go.sum", p.name)
		assert.Regexp(t, `(?m)^tool(\s*\(|\s)[^)]*k8s\.io/kubernetes/cmd/kube-apiserver`, string(p.mod), p.name)
	}
	assert.Regexp(t, `(?m)^\s*go\.etcd\.io/etcd/server/v3\s*$`, string(newest.mod), "controlplane.mod builds etcd")
}

func TestSelectedPin(t *testing.T) {
	versions, err := KubeVersions()
	require.NoError(t, err)
	for _, v := range versions {
		for _, sel := range []string{v, "v" + v} {
			t.Setenv(EnvKubeVersion, sel)
			p, err := selectedPin()
			require.NoError(t, err, sel)
			assert.Equal(t, v, p.minor, sel)
		}
	}
	t.Setenv(EnvKubeVersion, "")
	p, err := selectedPin()
	require.NoError(t, err)
	assert.Equal(t, versions[len(versions)-1], p.minor, "the default is the newest")

	t.Setenv(EnvKubeVersion, "1.20")
	_, err = selectedPin()
	require.ErrorContains(t, err, "INFORMERS_KUBE_VERSION=1.20: no kube-apiserver of that version is pinned")
}

// The help of kube-apiserver's --feature-gates flag, as 1.34 prints it
// (abridged), names the gates with their component, stage and default.
func TestParseGates(t *testing.T) {
	help := `      --feature-gates colonSeparatedMultimapStringString
                Comma-separated list of component:key=value pairs that describe feature gates for alpha/experimental features of different components.
                If the component is not specified, defaults to "kube". This flag can be repeatedly invoked. For example: --feature-gates 'wardle:featureA=true,wardle:featureB=false' --feature-gates 'kube:featureC=true'Options are:
                kube:APIResponseCompression=true|false (BETA - default=true)
                kube:AllAlpha=true|false (ALPHA - default=false)
                kube:AllBeta=true|false (BETA - default=false)
                kube:CBORServingAndStorage=true|false (ALPHA - default=false)
                kube:WatchList=true|false (BETA - default=true)
                wardle:BanFlunder=true|false (BETA - default=true)
                OldStyle=true|false (ALPHA - default=false)
`
	gates, err := parseGates([]byte(help))
	require.NoError(t, err)
	assert.Equal(t, map[string]Gate{
		"APIResponseCompression": {Stage: "BETA", Default: true},
		"CBORServingAndStorage":  {Stage: "ALPHA", Default: false},
		"WatchList":              {Stage: "BETA", Default: true},
		"OldStyle":               {Stage: "ALPHA", Default: false},
	}, gates)

	_, err = parseGates([]byte("Usage:\n  kube-apiserver [flags]\n"))
	require.Error(t, err, "a help without gates is not a kube-apiserver's")
}
