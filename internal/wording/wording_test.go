package wording

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestA(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"int", "an int"},
		{"int64", "an int64"},
		{"object", "an object"},
		{"array", "an array"},
		{"interface {}", "an interface {}"},
		{"string", "a string"},
		{"uint8", "a uint8"},
		{"unstructured.Unstructured", "an unstructured.Unstructured"},
		{"*v1.Pod", "a *v1.Pod"},
		{"[]string", "a []string"},
		{"map[string]int", "a map[string]int"},
		{"v1.PodPhase", "a v1.PodPhase"},
		{`"EventList"`, `an "EventList"`},
		{`"PodList"`, `a "PodList"`},
		{"", "a "},
	} {
		assert.Equal(t, tc.want, A(tc.in), tc.in)
	}
}

func TestPossessive(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"spec", "spec's"},
		{"containers", "containers'"},
		{"spec.containers", "spec.containers'"},
		{"status.phase", "status.phase's"},
	} {
		assert.Equal(t, tc.want, Possessive(tc.in), tc.in)
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 objects"}, {1, "1 object"}, {2, "2 objects"}, {200, "200 objects"}} {
		assert.Equal(t, tc.want, Count(tc.n, "object"), tc.n)
	}
	assert.Equal(t, "1 index", CountOf(1, "index", "indexes"))
	assert.Equal(t, "3 indexes", CountOf(3, "index", "indexes"))
}
