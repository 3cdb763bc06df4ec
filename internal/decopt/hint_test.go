package decopt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDidYouMean checks the hints of misspelt JSON names: by case, by
// edit distance within a third of the name, and none beyond.
func TestDidYouMean(t *testing.T) {
	names := []string{"group", "names", "scope", "versions", "nodeName", "conversion"}
	for _, tc := range []struct {
		name, want string
	}{
		{"grup", ` (did you mean "group"?)`},
		{"Group", ` (names are case-sensitive: did you mean "group"?)`},
		{"nodename", ` (names are case-sensitive: did you mean "nodeName"?)`},
		{"node", ""},
		{"verisons", ` (did you mean "versions"?)`},
		{"version", ` (did you mean "versions"?)`},
		{"convresion", ` (did you mean "conversion"?)`},
		{"x", ""},
		{"status", ""},
		{"", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, DidYouMean(tc.name, names))
		})
	}
	assert.Empty(t, DidYouMean("grup", nil))
}

// TestEditDistance checks the distance against hand-counted pairs.
func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"grup", "group", 1},
		{"ab", "ba", 1}, {"kitten", "sitting", 3}, {"spec", "spec", 0}, {"nodeNmae", "nodeName", 1},
	} {
		assert.Equal(t, tc.want, editDistance(tc.a, tc.b), "%q %q", tc.a, tc.b)
		assert.Equal(t, tc.want, editDistance(tc.b, tc.a), "%q %q", tc.b, tc.a)
	}
}
