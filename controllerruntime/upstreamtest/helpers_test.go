package upstreamtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSemverLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"v0.24.1", "v0.25.3", true},
		{"v0.25.3", "v0.24.1", false},
		{"v0.36.3", "v0.37.0", true},
		{"v0.37.2", "v0.37.2", false},
		{"v0.37.10", "v0.37.9", false},
		{"v0.9.0", "v0.10.0", true},
	} {
		assert.Equal(t, c.want, semverLess(c.a, c.b), "semverLess(%s, %s)", c.a, c.b)
	}
}

func TestParseReleases(t *testing.T) {
	got, err := parseReleases("v0.24.1@v0.36.3, v0.25.3@v0.37.2")
	require.NoError(t, err)
	assert.Equal(t, []release{{"v0.24.1", "v0.36.3"}, {"v0.25.3", "v0.37.2"}}, got)
	for _, bad := range []string{"v0.24.1", "0.24.1@0.36.3", "v0.24.1@"} {
		_, err := parseReleases(bad)
		assert.Error(t, err, "parseReleases(%q)", bad)
	}
}

func TestIsTestName(t *testing.T) {
	for name, want := range map[string]bool{
		"TestSource": true, "Test": true, "Test_x": true, "Testify": false, "TesT": false, "helper": false,
	} {
		assert.Equal(t, want, isTestName(name), name)
	}
}
