package testutil

import "slices"

// Engaged samples which of fleets (fleet.Fleet, say) engage each of
// clusters, and returns, sorted, the clusters engaged by more than one and
// those engaged by none. A cluster counts as engaged twice only if two
// fleets show it in two passes over the fleets in turn: a cluster handed
// over between the reads of one pass shows in both fleets' reads without
// being engaged by both at once.
func Engaged[F interface{ Clusters() []string }](fleets []F, clusters []string) (twice, none []string) {
	var passes [2][]map[string]bool
	for p := range passes {
		for _, fl := range fleets {
			in := map[string]bool{}
			for _, c := range fl.Clusters() {
				in[c] = true
			}
			passes[p] = append(passes[p], in)
		}
	}
	for _, c := range clusters {
		both, seen := 0, 0
		for n := range fleets {
			if passes[0][n][c] && passes[1][n][c] {
				both++
			}
			if passes[0][n][c] || passes[1][n][c] {
				seen++
			}
		}
		if both > 1 {
			twice = append(twice, c)
		}
		if seen == 0 {
			none = append(none, c)
		}
	}
	slices.Sort(twice)
	slices.Sort(none)
	return twice, none
}
