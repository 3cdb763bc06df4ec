package decopt

import (
	"fmt"
	"strings"
)

// DidYouMean returns a hint naming the candidate closest to name, a JSON
// field name that none of candidates is, if one is close enough to be
// the name meant: one that differs in case only, or by at most a third
// of name's letters (at least one) added, removed, changed or swapped.
// It returns "" if none is.
func DidYouMean(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		if c == "" || c == name {
			continue
		}
		if strings.EqualFold(c, name) {
			return fmt.Sprintf(" (names are case-sensitive: did you mean %q?)", c)
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if bestDist < 0 || d < bestDist || d == bestDist && c < best {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(1, len(name)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance returns the optimal string alignment distance of a and b:
// the fewest letters added, removed, changed, or swapped with the next,
// that make a into b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the table, of len(rb)+1 each.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
