package informers

import "k8s.io/apimachinery/pkg/util/resourceversion"

// compareVersions compares resource versions a and b as KEP-5504 allows:
// -1, 0 or 1 as a is older than, the same as or newer than b.
func compareVersions(a, b string) (int, error) {
	return resourceversion.CompareResourceVersion(a, b)
}

// beforeAll reports whether v, a cache's version, comes before every
// version: a source with no write yet lists at "0".
func beforeAll(v string) bool { return v == "0" }
